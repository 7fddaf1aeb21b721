#!/usr/bin/env python3
"""A fake Kubernetes API server for cgpu-lint's cluster tests (Python 3 standard library only).

It serves, over HTTPS on 127.0.0.1 only, what a real ACK cluster answers to the requests
`kubectl get` makes: discovery (/api, /apis, /api/v1, /apis/apps/v1), the DaemonSets in
kube-system (GET by name, LIST with limit/continue paging), the nodes (LIST with
limit/continue paging, GET by name) and, when asked for, pods (LIST across namespaces or in one,
paged, honouring a fieldSelector of `=`, `==` and `!=` terms on status.phase, spec.nodeName,
metadata.name and metadata.namespace, as the API server does for pods). Objects come from a recorded ACK cluster (ack-cn-hangzhou/:
the cgpu-installer and cgpu-core-installer DaemonSets as `kubectl get -o yaml --show-managed-fields`
printed them, and nine node templates) and are multiplied to as many nodes as asked, with distinct
names, IPs and ECS instance ids. Other DaemonSets of kube-system can be added from
ack-cn-hangzhou/device-plugins.json (not recorded: written after HAMi's chart, whose device plugin
selects gpu=on, ACK's ack-nvidia-device-plugin add-on, which selects
ack.node.gpu.schedule=default, and ACK's csi-plugin, a DaemonSet cgpu-lint does not read). Every
request is logged (one JSON line each) so tests can assert that only GET was used and that the
lists were paged.

One process serves several clusters, one port each (one cluster per kubeconfig context):

    fake_apiserver.py CONFIG.json

CONFIG:
    {"log": "requests.jsonl",
     "clusters": [{"name": "prod", "cert": "server.pem", "key": "server.key",
                   "token": "secret", "client_ca": "ca.pem" (optional: also accept client certs),
                   "tokens": ["run-a", "run-b"] (optional: more bearer tokens accepted),
                   "nodes": 2000, "installers": ["cgpu-installer", "cgpu-core-installer"],
                   "core_policy": "5" (optional), "forbid": ["list nodes"] (optional),
                   "delay": 0.0 (seconds before every answer), "data": "ack-cn-hangzhou",
                   "daemonsets": ["hami-device-plugin"] (optional: more DaemonSets in
                       kube-system, from device-plugins.json),
                   "node_selectors": {"hami-device-plugin": {"gpu": "on"}} (optional: replaces
                       a served DaemonSet's nodeSelector),
                   "node_labels": {"5": {"gpu": "on"}} (optional: labels added to the nodes
                       made from node template 5, counted from 0),
                   "pods": [{"node": 5, "count": 21, "namespace": "inference",
                             "name": "infer-%02d", "phase": "Running",
                             "resources": {"limits": {"aliyun.com/gpu-mem": "2"}}}]
                       (optional: groups of generated pods; node: the index of a served node
                       or a node name, null for a pod not yet scheduled; name: with %d for the
                       pod's number in its group, from 1; phase defaults to Running, resources
                       to none). Served in the API server's order: by namespace, then name.}]}

A cluster with a "runbook" entry is a stateful cluster instead (stateful.py: nodes that are
cordoned, drained and rebooted, installer pods, exec over WebSocket, faults); CONFIG then may
name "admin": true, a plain-HTTP endpoint on 127.0.0.1 (POST one JSON request, see
stateful.admin) for the harness and the `aliyun` stub, announced as `ADMIN <port>`.

On start it prints `READY <name> <port>` for each cluster, then `READY`, and serves until killed.
Answers follow the API server's own shapes (metav1.Status for errors, with the messages the
RBAC authorizer and the registry produce).
"""

import base64
import copy
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import stateful

HERE = os.path.dirname(os.path.abspath(__file__))
LOG_LOCK = threading.Lock()
KINDLESS = ("kind", "apiVersion")


def status(code, reason, message, details=None):
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return code, body


def make_nodes(templates, count, region):
    """`count` nodes cycling through the templates; names, IPs and instance ids made unique."""
    nodes = []
    for i in range(count):
        n = copy.deepcopy(templates[i % len(templates)])
        ip = "192.168.%d.%d" % (16 + i // 250, 1 + i % 250)
        virtual = n["metadata"]["labels"].get("type") == "virtual-kubelet"
        name = ("virtual-kubelet-%s-k-%d" % (region, i)) if virtual else ("%s.%s" % (region, ip))
        n["metadata"]["name"] = name
        n["metadata"]["labels"]["kubernetes.io/hostname"] = name
        n["metadata"]["uid"] = "0b%06d-5e2a-4c1f-9d3b-7a6e8c0f2d41" % i
        n["metadata"]["resourceVersion"] = str(481700000 + i)
        if not virtual:
            n["spec"]["providerID"] = "%s.i-bp%018d" % (region, 100000000000000000 + i * 7919)
            for a in n["status"].get("addresses", []):
                if a["type"] == "InternalIP":
                    a["address"] = ip
                elif a["type"] == "Hostname":
                    a["address"] = name
        for k in KINDLESS:  # list items come without kind/apiVersion from a real server
            n.pop(k, None)
        nodes.append(n)
    return nodes


class Cluster:
    def __init__(self, conf):
        self.name = conf["name"]
        self.world = None
        if conf.get("runbook") is not None:
            data = os.path.join(HERE, conf.get("data", "ack-cn-hangzhou"))
            self.world = stateful.World(self.name, conf["runbook"], data, None)
        self.token = conf.get("token")
        # More bearer tokens accepted (the runbook tests: one per run, so that the history
        # tells two runs of one plan apart).
        self.tokens = set(conf.get("tokens", []))
        # Serve the discovery of the policy-report CRDs (wgpolicyk8s.io/v1alpha2,
        # openreports.io/v1alpha1), so that `kubectl apply --dry-run=client` maps the reports.
        self.reports = bool(conf.get("reports"))
        self.forbid = set(conf.get("forbid", []))
        self.delay = float(conf.get("delay", 0))
        data = os.path.join(HERE, conf.get("data", "ack-cn-hangzhou"))
        with open(os.path.join(data, "daemonsets.json")) as f:
            recorded = json.load(f)
        wanted = conf.get("installers", ["cgpu-installer", "cgpu-core-installer"])
        self.daemonsets = {k: v for k, v in recorded.items() if k in wanted}
        extra = conf.get("daemonsets", [])
        if extra:
            with open(os.path.join(data, "device-plugins.json")) as f:
                others = json.load(f)
            for name in extra:
                self.daemonsets[name] = copy.deepcopy(others[name])
        for name, sel in conf.get("node_selectors", {}).items():
            self.daemonsets[name]["spec"]["template"]["spec"]["nodeSelector"] = sel
        if conf.get("core_policy") is not None and "cgpu-core-installer" in self.daemonsets:
            c = self.daemonsets["cgpu-core-installer"]["spec"]["template"]["spec"]["containers"][0]
            for e in c["env"]:
                if e["name"] == "POLICY":
                    e["value"] = conf["core_policy"]
        with open(os.path.join(data, "node-templates.json")) as f:
            templates = json.load(f)
        for i, labels in conf.get("node_labels", {}).items():
            templates[int(i)]["metadata"]["labels"].update(labels)
        self.nodes = make_nodes(templates, int(conf.get("nodes", len(templates))), "cn-hangzhou")
        self.node_index = {n["metadata"]["name"]: i for i, n in enumerate(self.nodes)}
        self.pods = make_pods(conf.get("pods", []), self.nodes)
        self.user = conf.get("user", "cgpu-audit")


def discovery(port):
    return {
        "/api": {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:%d" % port}
            ],
        },
        "/apis": {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": "apps",
                    "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                    "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
                }
            ],
        },
        "/api/v1": {
            "kind": "APIResourceList",
            "groupVersion": "v1",
            "resources": [
                {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
                 "verbs": ["create", "delete", "deletecollection", "get", "list", "patch",
                           "update", "watch"], "shortNames": ["no"]},
                {"name": "namespaces", "singularName": "namespace", "namespaced": False,
                 "kind": "Namespace", "verbs": ["get", "list"], "shortNames": ["ns"]},
                {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
                 "verbs": ["get", "list"], "shortNames": ["po"], "categories": ["all"]},
            ],
        },
        "/apis/apps/v1": {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": "apps/v1",
            "resources": [
                {"name": "daemonsets", "singularName": "daemonset", "namespaced": True,
                 "kind": "DaemonSet", "verbs": ["create", "delete", "deletecollection", "get",
                                                "list", "patch", "update", "watch"],
                 "shortNames": ["ds"], "categories": ["all"]},
            ],
        },
    }


def report_discovery():
    """The groups and resources of the policy-report CRDs, as the API server lists them."""
    out = {}
    for group, version, kinds in [
        ("wgpolicyk8s.io", "v1alpha2", [("policyreports", "PolicyReport", True, "polr"),
                                        ("clusterpolicyreports", "ClusterPolicyReport", False,
                                         "cpolr")]),
        ("openreports.io", "v1alpha1", [("reports", "Report", True, "reps"),
                                        ("clusterreports", "ClusterReport", False, "creps")]),
    ]:
        gv = "%s/%s" % (group, version)
        out[group] = {"name": group, "versions": [{"groupVersion": gv, "version": version}],
                      "preferredVersion": {"groupVersion": gv, "version": version}}
        out["/apis/" + gv] = {
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": [
                {"name": plural, "singularName": kind.lower(), "namespaced": namespaced,
                 "kind": kind, "shortNames": [short],
                 "verbs": ["create", "delete", "deletecollection", "get", "list", "patch",
                           "update", "watch"]}
                for plural, kind, namespaced, short in kinds
            ],
        }
    return out


def make_pods(groups, nodes):
    """The pods of the CONFIG's `pods` groups, in the API server's order (namespace, name)."""
    pods = []
    for g in groups:
        node = g.get("node")
        if isinstance(node, int):
            node = nodes[node]["metadata"]["name"]
        for i in range(1, int(g.get("count", 1)) + 1):
            pattern = g.get("name", "pod-%d")
            name = pattern % i if "%" in pattern else pattern
            ns = g.get("namespace", "default")
            container = {"name": "main", "image":
                         "registry-vpc.cn-hangzhou.aliyuncs.com/acs/sample:1.0",
                         "resources": copy.deepcopy(g.get("resources", {}))}
            phase = g.get("phase", "Running")
            pod = {
                "metadata": {"name": name, "namespace": ns,
                             "uid": "5f%06d-1c2d-4e5f-8a9b-0c1d2e3f4a5b" % len(pods),
                             "resourceVersion": str(490000000 + len(pods)),
                             "labels": {"app": name.rsplit("-", 1)[0]}},
                "spec": {"containers": [container], "restartPolicy": "Always",
                         "schedulerName": "default-scheduler"},
                "status": {"phase": phase},
            }
            if node is not None:
                pod["spec"]["nodeName"] = node
            if phase == "Running":
                pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
            pods.append(pod)
    pods.sort(key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    return pods


POD_FIELDS = {
    "status.phase": lambda p: p["status"].get("phase", ""),
    "spec.nodeName": lambda p: p["spec"].get("nodeName", ""),
    "metadata.name": lambda p: p["metadata"]["name"],
    "metadata.namespace": lambda p: p["metadata"]["namespace"],
}


def field_filter(selector):
    """A pods fieldSelector (`a=b,c!=d`) as a predicate, or a 400 Status for a bad one."""
    terms = []
    for term in filter(None, (selector or "").split(",")):
        for op in ("!=", "==", "="):
            if op in term:
                key, value = term.split(op, 1)
                break
        else:
            return None, status(400, "BadRequest",
                                 'invalid selector: \'%s\'; can\'t understand \'%s\''
                                 % (selector, term))
        if key not in POD_FIELDS:
            return None, status(400, "BadRequest",
                                'field label not supported: %s' % key)
        terms.append((POD_FIELDS[key], op == "!=", value))
    return (lambda p: all((f(p) != v) if neg else (f(p) == v) for f, neg, v in terms)), None


def page(q, items, kind, api_version, resource_version):
    """One page of a LIST, as the API server pages it (`limit`, an opaque `continue` token)."""
    limit = int(q.get("limit", "0") or 0)
    start = 0
    if q.get("continue"):
        try:
            start = int(base64.urlsafe_b64decode(q["continue"]).decode())
        except Exception:  # noqa: BLE001 - any bad token is the API's 400
            return status(400, "BadRequest", "continue key is not valid")
    end = len(items) if limit <= 0 else min(start + limit, len(items))
    meta = {"resourceVersion": resource_version}
    if end < len(items):
        meta["continue"] = base64.urlsafe_b64encode(str(end).encode()).decode()
        meta["remainingItemCount"] = len(items) - end
    return 200, {"kind": kind, "apiVersion": api_version, "metadata": meta,
                 "items": items[start:end]}


def make_handler(cluster, port, log_path):
    disc = discovery(port)
    if cluster.reports:
        for key, value in report_discovery().items():
            if key.startswith("/apis/"):
                disc[key] = value
            else:
                disc["/apis"]["groups"].append(value)
    if cluster.world is not None:
        core, group, policy = stateful.discovery_extra()
        disc["/api/v1"]["resources"].extend(core)
        for r in disc["/api/v1"]["resources"]:
            if r["name"] == "pods":
                r["verbs"] = ["create", "delete", "deletecollection", "get", "list", "patch",
                              "update", "watch"]
        disc["/apis"]["groups"].append(group)
        disc["/apis/policy/v1"] = policy
        group, leases = stateful.coordination_discovery()
        disc["/apis"]["groups"].append(group)
        disc["/apis/coordination.k8s.io/v1"] = leases
        # What `kubectl apply -f` of `generate rollout-job` creates (ServiceAccount, RBAC, Job).
        core, groups = stateful.stored_discovery()
        disc["/api/v1"]["resources"].extend(core)
        for group, path, resources in groups:
            disc["/apis"]["groups"].append(group)
            disc[path] = resources

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "fake-apiserver"

        def log_message(self, fmt, *args):  # quiet: the JSON log is the record
            pass

        def log_request_line(self, authed):
            u = urlsplit(self.path)
            entry = {
                "cluster": cluster.name,
                "method": self.command,
                "path": u.path,
                "query": {k: v[0] for k, v in parse_qs(u.query).items()},
                "authenticated": authed,
                "user_agent": self.headers.get("User-Agent", ""),
            }
            # The bearer token (the tests' own, made up): tells the runs of a test apart.
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Bearer "):
                entry["token"] = auth[len("Bearer "):]
            if self.command != "GET":
                entry["content_type"] = self.headers.get("Content-Type", "")
            if self.headers.get("Upgrade"):
                entry["upgrade"] = self.headers.get("Upgrade")
                entry["protocols"] = self.headers.get("Sec-WebSocket-Protocol", "")
            with LOG_LOCK, open(log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")

        def send_json(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def authenticated(self):
            auth = self.headers.get("Authorization", "")
            if cluster.token and auth == "Bearer " + cluster.token:
                return True
            if auth.startswith("Bearer ") and auth[len("Bearer "):] in cluster.tokens:
                return True
            cert = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
            return bool(cert)  # a client certificate the CA verified

        def handle_any(self):
            authed = self.authenticated()
            self.log_request_line(authed)
            if cluster.delay:
                time.sleep(cluster.delay)
            if cluster.world is not None:
                if not authed:
                    return self.send_json(*status(401, "Unauthorized", "Unauthorized"))
                u = urlsplit(self.path)
                path = u.path.rstrip("/")
                if self.command == "GET" and path in disc:
                    return self.send_json(200, disc[path])
                denied = self.forbidden_exec(path)
                if denied is not None:
                    return self.send_json(*denied)
                answer = stateful.handle(cluster.world, self, disc)
                if answer is not None:
                    self.send_json(*answer)
                return None
            if self.command != "GET":
                return self.send_json(*status(405, "MethodNotAllowed",
                                              "the server does not allow this method"))
            if not authed:
                return self.send_json(*status(401, "Unauthorized", "Unauthorized"))
            code, body = self.route()
            self.send_json(code, body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

        def forbidden_exec(self, path):
            """"forbid": ["create pods/exec"] on a stateful cluster: an exec (the WebSocket GET
            and SPDY's POST alike, which RBAC authorizes as create) refused as the RBAC
            authorizer refuses it."""
            parts = path.strip("/").split("/")
            if "create pods/exec" not in cluster.forbid or len(parts) != 7 \
                    or parts[:3] != ["api", "v1", "namespaces"] or parts[4] != "pods" \
                    or parts[6] != "exec":
                return None
            return status(403, "Forbidden",
                          'pods "%s" is forbidden: User "%s" cannot create resource "pods/exec" in API group "" in the namespace "%s"'
                          % (parts[5], cluster.user, parts[3]),
                          {"name": parts[5], "kind": "pods"})

        def forbidden(self, verb, resource, group, namespace=None, name=None):
            key = "%s %s" % (verb, resource)
            if key not in cluster.forbid:
                return None
            what = resource if not group else resource + "." + group
            subject = ('%s "%s"' % (what, name)) if name else what
            scope = ('in the namespace "%s"' % namespace) if namespace else "at the cluster scope"
            return status(403, "Forbidden",
                          '%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s'
                          % (subject, cluster.user, verb, resource, group, scope),
                          {"name": name, "group": group, "kind": resource} if name
                          else {"group": group, "kind": resource})

        def route(self):
            u = urlsplit(self.path)
            q = {k: v[0] for k, v in parse_qs(u.query).items()}
            path = u.path.rstrip("/")
            if path in disc:
                return 200, disc[path]
            parts = path.strip("/").split("/")
            # /api/v1/nodes[/NAME]
            if parts[:3] == ["api", "v1", "nodes"]:
                if len(parts) == 3:
                    return self.forbidden("list", "nodes", "") or self.list_nodes(q)
                if len(parts) == 4:
                    f = self.forbidden("get", "nodes", "", name=parts[3])
                    if f:
                        return f
                    i = cluster.node_index.get(parts[3])
                    if i is None:
                        return status(404, "NotFound", 'nodes "%s" not found' % parts[3],
                                      {"name": parts[3], "kind": "nodes"})
                    return 200, dict(cluster.nodes[i], kind="Node", apiVersion="v1")
            # /api/v1/pods, /api/v1/namespaces/NS/pods (LIST)
            if parts == ["api", "v1", "pods"]:
                return self.forbidden("list", "pods", "") or self.list_pods(q, None)
            if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 5 \
                    and parts[4] == "pods":
                return self.forbidden("list", "pods", "", namespace=parts[3]) \
                    or self.list_pods(q, parts[3])
            # /api/v1/namespaces/NAME (kubectl asks after a NotFound whether the namespace exists)
            if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 4:
                if parts[3] in ("default", "kube-system", "kube-public", "kube-node-lease"):
                    return 200, {"kind": "Namespace", "apiVersion": "v1",
                                 "metadata": {"name": parts[3]}, "spec": {"finalizers": ["kubernetes"]},
                                 "status": {"phase": "Active"}}
                return status(404, "NotFound", 'namespaces "%s" not found' % parts[3],
                              {"name": parts[3], "kind": "namespaces"})
            # /apis/apps/v1/namespaces/NS/daemonsets[/NAME]
            if parts[:4] == ["apis", "apps", "v1", "namespaces"] and len(parts) >= 6 \
                    and parts[5] == "daemonsets":
                ns = parts[4]
                objs = cluster.daemonsets if ns == "kube-system" else {}
                if len(parts) == 6:
                    f = self.forbidden("list", "daemonsets", "apps", namespace=ns)
                    if f:
                        return f
                    items = []
                    for o in objs.values():
                        o = copy.deepcopy(o)
                        for k in KINDLESS:
                            o.pop(k, None)
                        items.append(o)
                    return page(q, items, "DaemonSetList", "apps/v1", "48300000")
                if len(parts) == 7:
                    name = parts[6]
                    f = self.forbidden("get", "daemonsets", "apps", namespace=ns, name=name)
                    if f:
                        return f
                    if name not in objs:
                        return status(404, "NotFound", 'daemonsets.apps "%s" not found' % name,
                                      {"name": name, "group": "apps", "kind": "daemonsets"})
                    return 200, objs[name]
            return status(404, "NotFound", "the server could not find the requested resource")

        def list_nodes(self, q):
            return page(q, cluster.nodes, "NodeList", "v1", "481800000")

        def list_pods(self, q, namespace):
            keep, bad = field_filter(q.get("fieldSelector"))
            if bad:
                return bad
            items = [p for p in cluster.pods
                     if keep(p) and namespace in (None, p["metadata"]["namespace"])]
            return page(q, items, "PodList", "v1", "490100000")

    return Handler


def make_admin_handler(worlds):
    class Admin(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0") or 0)
            try:
                answer = stateful.admin(worlds, json.loads(self.rfile.read(n) or b"{}"))
            except Exception as e:  # noqa: BLE001 - the harness reads the message
                answer = {"error": "admin: %s: %s" % (type(e).__name__, e)}
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Admin


def tick(worlds):
    """The controllers run on their own too (nodes come back while nobody asks)."""
    while True:
        time.sleep(0.05)
        with stateful.LOCK:
            for w in worlds:
                w.controller()


def main():
    with open(sys.argv[1]) as f:
        conf = json.load(f)
    log_path = conf["log"]
    servers = []
    worlds = {}
    for c in conf["clusters"]:
        cluster = Cluster(c)
        if cluster.world is not None:
            worlds[cluster.name] = cluster.world
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(c["cert"], c["key"])
        ctx.set_alpn_protocols(["http/1.1"])
        if c.get("client_ca"):
            ctx.verify_mode = ssl.CERT_OPTIONAL
            ctx.load_verify_locations(c["client_ca"])
        httpd = ThreadingHTTPServer(("127.0.0.1", int(c.get("port", 0))), None)
        httpd.daemon_threads = True
        port = httpd.server_address[1]
        httpd.RequestHandlerClass = make_handler(cluster, port, log_path)
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
        servers.append(httpd)
        print("READY %s %d" % (cluster.name, port), flush=True)
    if conf.get("admin"):
        admin = ThreadingHTTPServer(("127.0.0.1", 0), make_admin_handler(worlds))
        admin.daemon_threads = True
        servers.append(admin)
        print("ADMIN %d" % admin.server_address[1], flush=True)
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    if worlds:
        threading.Thread(target=tick, args=(list(worlds.values()),), daemon=True).start()
    print("READY", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
