"""A stateful cluster for the reboot runbook (Python 3 standard library only), behind
fake_apiserver.py: what the generated script asks of a real ACK cluster through the real kubectl.

- nodes: GET, LIST (label and field selectors), PATCH (strategic merge and merge patch: cordon,
  uncordon, annotate), watch; the kube-system namespace with a stable uid;
- pods: LIST (label and field selectors, all namespaces or one), GET, DELETE (graceful: the pod
  keeps a deletionTimestamp for a moment), watch; the policy/v1 Eviction subresource, refused
  with 429 as the real server does while a PodDisruptionBudget allows no disruption;
- poddisruptionbudgets (policy/v1) LIST; daemonsets GET/LIST;
- exec over WebSocket (v5.channel.k8s.io and v4.channel.k8s.io): stdout on channel 1, stderr on
  2, the exit Status on 3. `nsenter -t 1 ... -- sh -c SCRIPT` runs SCRIPT with /proc/cgpu_km
  pointed at the node's simulated module (version, one policy file per GPU, or nothing);
- a DaemonSet controller: one installer pod per selected node from the DaemonSet's current
  template; OnDelete renews a pod only when it is deleted, RollingUpdate replaces outdated pods
  one unavailable at a time; an installer pod that starts where the module is not loaded loads it
  with its own POLICY and image version (after a reboot, too);
- an ECS account shared by every cluster of the process (instances by id), rebooted through the
  admin channel (the `aliyun` stub): the node goes NotReady, its boot id changes, it comes back
  Ready and its installer pod loads the module again;
- faults, set through the admin channel, at once or after the Nth change the cluster sees;
- coordination.k8s.io/v1 Leases in kube-system as the API server keeps them: create answers 409
  AlreadyExists when the name is taken, an update (PUT) whose resourceVersion is stale answers 409
  Conflict, GET, LIST and DELETE (the runbook's cluster lock);
- other actors: a node label `nvidia.com/gpu-driver-upgrade-state` (the GPU Operator's driver
  upgrade), kured's lock annotation on a `kured` DaemonSet (listed, never reconciled).

Every request that changes something is attributed to its bearer token (`by` in the history), so
that the harness can tell two runs of one plan apart.

Every change and every reboot is recorded in the history the admin channel returns, with what
the harness needs to judge it (was the node cordoned and drained when its instance rebooted,
which instance the live providerID names, how many nodes carry our cordon).
"""

import base64
import copy
import hashlib
import json
import os
import random
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from urllib.parse import parse_qs, urlsplit

MARK = "cgpu-lint/cordoned"
LOCK = threading.RLock()
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
NOW = time.time
# Seconds of simulated time (the harness can make the cluster slower through "timing").
TIMING = {"pod_ready": 0.3, "grace": 0.3, "reboot_down": 0.3, "boot": 0.8}


def rfc3339(t=None):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t if t is not None else NOW()))


def status(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return code, body


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch; a strategic merge patch of maps and scalars (all kubectl's
    cordon, uncordon and annotate send) merges the same way."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$"):  # strategic merge directives ($retainKeys, $patch): not used here
            continue
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def split_top(s):
    """Split a selector on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def label_match(selector, labels):
    """Kubernetes label selector syntax: k=v, k==v, k!=v, k in (..), k notin (..), k, !k."""
    if not selector:
        return True
    for req in split_top(selector):
        m = re.match(r"^([\w./-]+)\s+(in|notin)\s+\((.*)\)$", req)
        if m:
            vals = {v.strip() for v in m.group(3).split(",")}
            has = m.group(1) in labels and labels[m.group(1)] in vals
            if (m.group(2) == "in") != has:
                return False
            continue
        m = re.match(r"^([\w./-]+)\s*(==|!=|=)\s*(.*)$", req)
        if m:
            k, op, v = m.group(1), m.group(2), m.group(3).strip()
            if op == "!=":
                if labels.get(k) == v:
                    return False
            elif labels.get(k) != v:
                return False
            continue
        if req.startswith("!"):
            if req[1:].strip() in labels:
                return False
        elif req not in labels:
            return False
    return True


def field_of(obj, path):
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def field_match(selector, obj):
    if not selector:
        return True
    for req in split_top(selector):
        m = re.match(r"^([\w.]+)\s*(==|!=|=)\s*(.*)$", req)
        if not m:
            return False
        v = field_of(obj, m.group(1))
        if (m.group(2) == "!=") == (v == m.group(3)):
            return False
    return True


def finished(pod):
    return pod["status"].get("phase") in ("Succeeded", "Failed")


REBOOT_LABEL = "app.kubernetes.io/component"


def is_reboot_pod(pod):
    """A pod of `rollout --reboot-via node` (kube-system, app.kubernetes.io/component=reboot)."""
    return (pod["metadata"].get("namespace") == "kube-system"
            and pod["metadata"].get("labels", {}).get(REBOOT_LABEL) == "reboot")


def reboot_pod_problem(pod):
    """Why this reboot pod cannot reboot its node (None: it can): it needs the host's PID
    namespace and a privileged container that enters PID 1's namespaces (mount at least) and
    runs `systemctl reboot` there."""
    spec = pod.get("spec") or {}
    if spec.get("hostPID") is not True:
        return "hostPID is not true: nsenter -t 1 enters the container's own init"
    for c in spec.get("containers") or []:
        cmd = list(c.get("command") or []) + list(c.get("args") or [])
        if cmd[-2:] != ["systemctl", "reboot"]:
            continue
        if not (c.get("securityContext") or {}).get("privileged"):
            return "container %s is not privileged" % c.get("name")
        if not cmd or cmd[0] != "nsenter" or "--" not in cmd:
            return "container %s does not enter the host's namespaces (nsenter ... --)" % c.get("name")
        opts = cmd[1:cmd.index("--")]
        if "-t" not in opts or opts[opts.index("-t") + 1:opts.index("-t") + 2] != ["1"] \
                or "-m" not in opts:
            return "container %s: nsenter without -t 1 -m" % c.get("name")
        return None
    return "no container runs systemctl reboot"


def image_version(image):
    tag = image.rsplit(":", 1)[-1]
    return tag.lstrip("v").split("-")[0]


class Ecs:
    """The cloud account: instance id -> (world, node name). Shared by every cluster."""

    def __init__(self):
        self.instances = {}
        self.reboots = []


ECS = Ecs()


class World:
    def __init__(self, name, conf, data_dir, log_event):
        self.name = name
        self.log_event = log_event
        self.rng = random.Random(conf.get("seed", 0))
        self.rv = 1000
        self.ns_uid = conf.get("ns_uid", str(uuid.UUID(int=self.rng.getrandbits(128))))
        self.mutations = 0
        self.faults = {}  # (node, kind) -> True
        self.pending = []  # [{"after": n, "action": {...}}]
        self.history = []
        with open(os.path.join(data_dir, "node-templates.json")) as f:
            self.node_template = json.load(f)[0]
        with open(os.path.join(data_dir, "daemonsets.json")) as f:
            recorded = json.load(f)
        self.daemonsets = {}
        for dsname, dconf in conf.get("daemonsets", {}).items():
            ds = copy.deepcopy(recorded[dsname])
            ds["metadata"].pop("managedFields", None)
            ds["metadata"]["generation"] = 1
            self.set_template(ds, dconf.get("policy"), dconf.get("image"), bump=False)
            strategy = dconf.get("strategy", "RollingUpdate")
            ds["spec"]["updateStrategy"] = {"type": strategy}
            if strategy == "RollingUpdate":
                ds["spec"]["updateStrategy"]["rollingUpdate"] = {"maxSurge": 0, "maxUnavailable": 1}
            self.daemonsets[dsname] = ds
            self.touch(ds)
        self.nodes = {}
        self.ext = {}  # node name -> simulated machine: module, gpus, boot phases
        self.pods = {}  # (ns, name) -> pod
        self.tombstones = []  # (rv, kind, obj) of deleted objects, for watches
        self.pdbs = []
        self.leases = {}  # name -> Lease (kube-system)
        self.events = []  # core/v1 Events (any namespace)
        # What `kubectl apply -f` of `generate rollout-job` creates: ServiceAccounts, Roles,
        # RoleBindings, ClusterRoles, ClusterRoleBindings, Jobs; (resource, namespace or None,
        # name) -> object, stored as sent (nothing runs them: the harness plays the Job's pod).
        self.stored = {}
        # "create leases": the user may not create Leases (403), as with a read-only Role.
        self.forbid = set(conf.get("forbid", []))
        self.agent = None  # the bearer token of the request being served
        # Other DaemonSets that are only listed (kured with its lock annotation), never reconciled.
        self.listed_daemonsets = {}
        if conf.get("kured_lock") is not None:
            self.set_kured_lock(conf["kured_lock"])
        for n in conf.get("nodes", []):
            self.add_node(n)
        for p in conf.get("pdbs", []):
            self.add_pdb(p)
        # Installer pods as they are before the change: built from the template the DaemonSet
        # had then (image and POLICY), all Ready.
        for dsname, dconf in conf.get("daemonsets", {}).items():
            ds = self.daemonsets[dsname]
            for node in list(self.nodes.values()):
                if self.selected(ds, node):
                    pod = self.new_ds_pod(ds, node["metadata"]["name"],
                                          dconf.get("pod_policy"), dconf.get("pod_image"))
                    if self.node_ready(node["metadata"]["name"]):
                        pod["status"]["conditions"][0]["status"] = "True"
                        pod["status"]["containerStatuses"][0]["ready"] = True
                        pod["ready_at"] = 0
                    else:  # a node NotReady from the start: its pods are not Ready either
                        pod["ready_at"] = float("inf")
        self.controller()

    # ---- objects -------------------------------------------------------------------------

    def touch(self, obj):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)

    def installer_template(self):
        ds = self.daemonsets.get("cgpu-installer")
        if ds is None:
            return {}
        c = ds["spec"]["template"]["spec"]["containers"][0]
        return {"ds_policy": self.pod_policy(ds["spec"]["template"]), "ds_image": c["image"]}

    def record(self, ev, **kw):
        e = {"seq": len(self.history), "t": round(NOW(), 3), "cluster": self.name, "ev": ev,
             "by": self.agent}
        e.update(kw)
        self.history.append(e)

    def ours_cordoned(self):
        return sorted(n for n, o in self.nodes.items()
                      if o["spec"].get("unschedulable") and MARK in o["metadata"].get("annotations", {}))

    def add_node(self, c):
        n = copy.deepcopy(self.node_template)
        name = c["name"]
        region = c.get("region", "cn-hangzhou")
        n["metadata"]["name"] = name
        n["metadata"]["uid"] = c.get("uid") or str(uuid.UUID(int=self.rng.getrandbits(128)))
        n["metadata"]["creationTimestamp"] = rfc3339()
        labels = n["metadata"]["labels"]
        labels["kubernetes.io/hostname"] = name
        labels["topology.kubernetes.io/region"] = region
        if c.get("schedule"):
            labels["ack.node.gpu.schedule"] = c["schedule"]
        else:
            labels.pop("ack.node.gpu.schedule", None)
        labels.update(c.get("labels", {}))
        n["metadata"]["annotations"] = dict(c.get("annotations", {}))
        n["spec"] = {"providerID": "%s.%s" % (region, c["instance"])}
        if c.get("cordoned"):
            n["spec"]["unschedulable"] = True
        gpus = int(c.get("gpus", 1))
        n["status"]["allocatable"]["aliyun.com/gpu-mem"] = str(c.get("gpu_mem", 22))
        n["status"]["capacity"] = dict(n["status"]["allocatable"])
        n["status"]["nodeInfo"]["bootID"] = str(uuid.UUID(int=self.rng.getrandbits(128)))
        n["status"]["nodeInfo"]["machineID"] = hashlib.md5(c["instance"].encode()).hexdigest()
        self.set_ready(n, c.get("ready", True))
        self.nodes[name] = n
        module = c.get("module")
        self.ext[name] = {
            "gpus": gpus,
            "module": None if module is None else
            {"version": module["version"], "policies": [str(module["policy"])] * gpus},
            "phase": "up", "until": 0, "stale": None,
        }
        ECS.instances[c["instance"]] = (self, name)
        self.touch(n)
        for i, mem in enumerate(c.get("workloads", [])):
            self.add_workload(name, i, mem)
        return n

    def set_ready(self, n, ready):
        for cond in n["status"]["conditions"]:
            if cond["type"] == "Ready":
                want = "True" if ready else "False"
                if cond["status"] != want:
                    cond["status"] = want
                    cond["lastTransitionTime"] = rfc3339()
                cond["reason"] = "KubeletReady" if ready else "KubeletNotReady"
                cond["message"] = ("kubelet is posting ready status" if ready else
                                   "container runtime status check may not have completed yet")

    def node_ready(self, name):
        n = self.nodes.get(name)
        if not n:
            return False
        return any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])

    def add_workload(self, node, i, mem):
        short = node.split(".")[-1]
        name = "train-%s-%d-%s" % (short, i, self.suffix())
        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "uid": str(uuid.UUID(int=self.rng.getrandbits(128))),
                         "labels": {"app": "train"}, "creationTimestamp": rfc3339(),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": "train-7c9f", "uid": "5d3e0c1a",
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"nodeName": node, "containers": [{
                "name": "train", "image": "registry.example/train:1",
                "resources": {"limits": {"aliyun.com/gpu-mem": str(mem)},
                              "requests": {"aliyun.com/gpu-mem": str(mem)}}}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }
        self.pods[("default", name)] = pod
        self.touch(pod)

    def add_pdb(self, p):
        pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": p["name"], "namespace": p.get("namespace", "default"),
                            "uid": str(uuid.UUID(int=self.rng.getrandbits(128)))},
               "spec": {"selector": {"matchLabels": p.get("match", {"app": "train"})},
                        "minAvailable": p.get("min_available", 1)},
               "status": {"disruptionsAllowed": int(p.get("allowed", 0)), "currentHealthy": 1,
                          "desiredHealthy": 1, "expectedPods": 1, "observedGeneration": 1}}
        self.pdbs.append(pdb)
        self.touch(pdb)

    def set_kured_lock(self, node):
        """kured's DaemonSet with its lock annotation naming `node` (None: the lock is free)."""
        meta = {"name": "kured", "namespace": "kube-system", "uid": str(uuid.uuid4()),
                "generation": 1, "annotations": {}}
        if node:
            meta["annotations"]["weave.works/kured-node-lock"] = json.dumps(
                {"nodeID": node, "metadata": {"unschedulable": False},
                 "created": rfc3339(), "TTL": 0}, separators=(",", ":"))
        ds = {"metadata": meta, "spec": {"selector": {"matchLabels": {"name": "kured"}},
                                         "template": {"metadata": {"labels": {"name": "kured"}},
                                                      "spec": {"containers": [{"name": "kured", "image": "ghcr.io/kubereboot/kured:1.17.1"}]}}},
              "status": {}}
        self.listed_daemonsets["kured"] = ds
        self.touch(ds)

    def suffix(self):
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))

    def set_template(self, ds, policy, image, bump=True):
        c = ds["spec"]["template"]["spec"]["containers"][0]
        if policy is not None:
            for e in c["env"]:
                if e["name"] == "POLICY":
                    e["value"] = str(policy)
        if image is not None:
            c["image"] = image
        if bump:
            ds["metadata"]["generation"] += 1
            self.touch(ds)

    def selected(self, ds, node):
        sel = ds["spec"]["template"]["spec"].get("nodeSelector", {})
        labels = node["metadata"]["labels"]
        return all(labels.get(k) == v for k, v in sel.items())

    def new_ds_pod(self, ds, node, policy=None, image=None):
        tmpl = copy.deepcopy(ds["spec"]["template"])
        name = "%s-%s" % (ds["metadata"]["name"], self.suffix())
        gen = ds["metadata"]["generation"]
        c = tmpl["spec"]["containers"][0]
        if policy is not None or image is not None:
            gen = 0  # built from an older template
            for e in c["env"]:
                if e["name"] == "POLICY" and policy is not None:
                    e["value"] = str(policy)
            if image is not None:
                c["image"] = image
        meta = tmpl["metadata"]
        meta.pop("creationTimestamp", None)
        meta.update({"name": name, "namespace": "kube-system", "generateName": ds["metadata"]["name"] + "-",
                     "uid": str(uuid.UUID(int=self.rng.getrandbits(128))),
                     "creationTimestamp": rfc3339(),
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                          "name": ds["metadata"]["name"],
                                          "uid": ds["metadata"]["uid"], "controller": True,
                                          "blockOwnerDeletion": True}]})
        meta["labels"] = dict(meta.get("labels", {}), **{"pod-template-generation": str(gen)})
        spec = tmpl["spec"]
        spec["nodeName"] = node
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
               "status": {"phase": "Running", "hostIP": "", "startTime": rfc3339(),
                          "conditions": [{"type": "Ready", "status": "False"}],
                          "containerStatuses": [{"name": c["name"], "image": c["image"],
                                                 "ready": False, "restartCount": 0}]},
               "ready_at": NOW() + TIMING["pod_ready"]}
        self.pods[("kube-system", name)] = pod
        self.touch(pod)
        return pod

    def pod_policy(self, pod):
        for e in pod["spec"]["containers"][0].get("env", []):
            if e["name"] == "POLICY":
                return e.get("value", "")
        return ""

    def pods_on(self, node):
        return [p for p in self.pods.values() if p["spec"].get("nodeName") == node]

    def ds_of(self, pod):
        for o in pod["metadata"].get("ownerReferences", []):
            if o.get("kind") == "DaemonSet":
                return self.daemonsets.get(o["name"])
        return None

    def drained(self, node):
        """No pod left on the node but DaemonSet pods (and the reboot pods of --reboot-via node,
        which are made to run on a drained node)."""
        return not any(self.ds_of(p) is None and not is_reboot_pod(p) for p in self.pods_on(node)
                       if not finished(p))

    def delete_pod(self, key, grace=True):
        pod = self.pods.get(key)
        if pod is None:
            return
        if grace and TIMING["grace"] > 0:
            if "deletionTimestamp" not in pod["metadata"]:
                pod["metadata"]["deletionTimestamp"] = rfc3339()
                pod["metadata"]["deletionGracePeriodSeconds"] = 30
                pod["gone_at"] = NOW() + TIMING["grace"]
                self.touch(pod)
            return
        del self.pods[key]
        self.touch(pod)
        self.tombstones.append((self.rv, "pods", pod))

    def delete_node(self, name):
        n = self.nodes.pop(name, None)
        if n is None:
            return
        self.ext.pop(name, None)
        self.touch(n)
        self.tombstones.append((self.rv, "nodes", n))
        for key in [k for k, p in self.pods.items() if p["spec"].get("nodeName") == name]:
            self.delete_pod(key, grace=False)

    # ---- the controllers (run under LOCK, often) -----------------------------------------

    def controller(self):
        now = NOW()
        for key, pod in list(self.pods.items()):
            if pod.get("gone_at") and now >= pod["gone_at"]:
                self.delete_pod(key, grace=False)
        # reboots in flight
        for name, ext in self.ext.items():
            n = self.nodes[name]
            if ext["phase"] == "going-down" and now >= ext["until"]:
                ext["stale"] = ext["module"]
                ext["module"] = None
                self.set_ready(n, False)
                ext["phase"], ext["until"] = "booting", now + TIMING["boot"]
                for p in self.pods_on(name):
                    self.set_pod_ready(p, False)
                    p["ready_at"] = float("inf")
                self.touch(n)
            elif ext["phase"] == "booting" and now >= ext["until"]:
                n["status"]["nodeInfo"]["bootID"] = str(uuid.UUID(int=self.rng.getrandbits(128)))
                ext["phase"] = "up"
                if not self.faults.get((name, "never_ready")):
                    self.set_ready(n, True)
                    for p in self.pods_on(name):  # the kubelet starts the node's pods again
                        if finished(p):
                            continue
                        p["ready_at"] = now + TIMING["pod_ready"]
                        cs = p["status"].get("containerStatuses")
                        if cs:
                            cs[0]["restartCount"] += 1
                self.touch(n)
        for ds in self.daemonsets.values():
            self.reconcile(ds, now)
        for pod in list(self.pods.values()):
            if (pod["status"]["conditions"][0]["status"] != "True" and now >= pod.get("ready_at", 0)
                    and "deletionTimestamp" not in pod["metadata"] and not finished(pod)
                    and self.node_ready(pod["spec"].get("nodeName"))):
                node = pod["spec"]["nodeName"]
                if self.ds_of(pod) is not None and self.faults.get((node, "installer_never_ready")):
                    continue
                if is_reboot_pod(pod):
                    self.run_reboot_pod(pod, node)
                    continue
                if pod["status"].get("phase") == "Pending":  # a pod created through the API
                    pod["status"]["phase"] = "Running"
                    pod["status"]["startTime"] = rfc3339()
                self.set_pod_ready(pod, True)
                if self.ds_of(pod) is not None:
                    self.installer_runs(pod, node)

    def installer_runs(self, pod, node):
        """The installer: where the module is not loaded it loads it with its POLICY and version;
        where it is loaded a new policy only takes effect at the next reboot."""
        ext = self.ext[node]
        if ext["module"] is not None:
            return
        if ext["stale"] is not None and self.faults.get((node, "old_policy")):
            ext["module"] = copy.deepcopy(ext["stale"])
        else:
            ext["module"] = {"version": image_version(pod["spec"]["containers"][0]["image"]),
                             "policies": [self.pod_policy(pod)] * ext["gpus"]}
        ext["stale"] = None
        self.record("module-loaded", node=node, module=ext["module"], pod=pod["metadata"]["name"])

    def set_pod_ready(self, pod, ready):
        want = "True" if ready else "False"
        if pod["status"]["conditions"][0]["status"] != want:
            pod["status"]["conditions"][0]["status"] = want
            for cs in pod["status"].get("containerStatuses", []):
                cs["ready"] = ready
            self.touch(pod)

    def reconcile(self, ds, now):
        dsname = ds["metadata"]["name"]
        gen = str(ds["metadata"]["generation"])
        mine = [p for p in self.pods.values() if self.ds_of(p) is ds]
        for name, node in self.nodes.items():
            live = [p for p in mine if p["spec"]["nodeName"] == name
                    and "deletionTimestamp" not in p["metadata"]]
            if self.selected(ds, node) and not live and \
                    not any(p["spec"]["nodeName"] == name for p in mine):
                self.new_ds_pod(ds, name)
        for p in mine:
            if p["spec"]["nodeName"] not in self.nodes or not self.selected(ds, self.nodes[p["spec"]["nodeName"]]):
                self.delete_pod((p["metadata"]["namespace"], p["metadata"]["name"]))
        if ds["spec"]["updateStrategy"]["type"] == "RollingUpdate":
            mine = [p for p in self.pods.values() if self.ds_of(p) is ds]
            unavailable = sum(1 for p in mine if "deletionTimestamp" in p["metadata"]
                              or p["status"]["conditions"][0]["status"] != "True")
            outdated = [p for p in mine if p["metadata"]["labels"].get("pod-template-generation") != gen
                        and "deletionTimestamp" not in p["metadata"]]
            outdated.sort(key=lambda p: p["status"]["conditions"][0]["status"] == "True")
            if outdated and (unavailable < 1 or outdated[0]["status"]["conditions"][0]["status"] != "True"):
                p = outdated[0]
                self.delete_pod((p["metadata"]["namespace"], p["metadata"]["name"]))
        mine = [p for p in self.pods.values() if self.ds_of(p) is ds]
        desired = sum(1 for n in self.nodes.values() if self.selected(ds, n))
        ready = sum(1 for p in mine if p["status"]["conditions"][0]["status"] == "True")
        st = {"currentNumberScheduled": len({p["spec"]["nodeName"] for p in mine}),
              "desiredNumberScheduled": desired, "numberMisscheduled": 0,
              "numberReady": ready, "numberAvailable": ready,
              "updatedNumberScheduled": sum(1 for p in mine if p["metadata"]["labels"].get(
                  "pod-template-generation") == gen),
              "observedGeneration": ds["metadata"]["generation"]}
        if desired - ready > 0:
            st["numberUnavailable"] = desired - ready
        if st != ds.get("status"):
            ds["status"] = st
            self.touch(ds)
        del dsname

    # ---- faults and the cloud ------------------------------------------------------------

    def mutated(self, what):
        self.mutations += 1
        fire = [p for p in self.pending if self.mutations >= p["after"]]
        self.pending = [p for p in self.pending if self.mutations < p["after"]]
        for p in fire:
            self.apply_action(p["action"])
        del what

    def apply_action(self, a):
        kind = a["fault"]
        node = a.get("node")
        self.record("fault", fault=kind, node=node, value=a.get("value"), mutations=self.mutations)
        if kind == "node_deleted":
            self.delete_node(node)
        elif kind == "node_replaced":
            old = self.nodes.get(node)
            if old is None:
                return
            conf = {"name": node, "instance": a["value"],
                    "schedule": old["metadata"]["labels"].get("ack.node.gpu.schedule"),
                    "gpus": self.ext[node]["gpus"], "module": None}
            self.delete_node(node)
            self.add_node(conf)
        elif kind == "policy_changed":
            self.set_template(self.daemonsets["cgpu-installer"], a["value"], None)
        elif kind == "installer_pod_stuck":
            # the node's installer pods are being deleted and never go (a node lost to its
            # kubelet): the DaemonSet controller makes no new one while they exist
            for p in self.pods_on(node):
                if self.ds_of(p) is not None and "deletionTimestamp" not in p["metadata"]:
                    p["metadata"]["deletionTimestamp"] = rfc3339()
                    p["metadata"]["deletionGracePeriodSeconds"] = 30
                    p["gone_at"] = float("inf")
                    self.touch(p)
        elif kind == "drain_refused":
            self.add_pdb({"name": "train-pdb-%s" % node.split(".")[-1], "allowed": 0,
                          "match": {"app": "train"}})
        else:
            self.faults[(node, kind)] = True

    def set_fault(self, a):
        if int(a.get("after", 0)) <= self.mutations:
            self.apply_action(a)
        else:
            self.pending.append({"after": int(a["after"]), "action": a})

    def clear_faults(self, restore_policy=None):
        now = NOW()
        for (name, kind) in self.faults:
            if kind == "never_ready" and name in self.nodes and not self.node_ready(name):
                self.set_ready(self.nodes[name], True)  # the kubelet recovers
                for p in self.pods_on(name):
                    p["ready_at"] = now + TIMING["pod_ready"]
                self.touch(self.nodes[name])
        self.faults = {}
        self.pending = []
        self.pdbs = [p for p in self.pdbs if not p["metadata"]["name"].startswith("train-pdb-")]
        if restore_policy is not None:
            ds = self.daemonsets["cgpu-installer"]
            if self.pod_policy(ds["spec"]["template"]) != str(restore_policy):
                self.set_template(ds, restore_policy, None)
        self.record("faults-cleared")

    def reboot(self, name, instance, region, dry_run, agent=None):
        """RebootInstance of `instance`, which last ran node `name` of this cluster; returns an
        ECS error code or None. An instance whose node is gone or replaced still exists in the
        account: it reboots, but no node of this cluster goes down with it."""
        if dry_run:
            return "DryRunOperation"
        n = self.nodes.get(name)
        live = n["spec"].get("providerID", "") if n else ""
        matches = n is not None and live == "%s.%s" % (region, instance)
        if n is not None and live.split(".")[-1] == instance and not matches:
            return "InvalidParameter.RegionId"  # the instance is not in that region
        ext = self.ext.get(name) if matches else None
        entry = {"node": name, "instance": instance, "region": region,
                 "live_provider_id": live, "provider_id_matches": matches,
                 "cordoned": bool(n and matches and n["spec"].get("unschedulable")),
                 "drained": bool(matches and self.drained(name)),
                 "ours": bool(n and matches and MARK in n["metadata"].get("annotations", {})),
                 "module": copy.deepcopy(ext["module"]) if ext else None,
                 "ours_cordoned": self.ours_cordoned()}
        if matches and self.faults.get((name, "reboot_refused")):
            self.record("reboot-refused", **entry)
            return "IncorrectInstanceStatus"
        effective = matches and not self.faults.get((name, "reboot_never"))
        self.agent = agent
        entry.update(self.installer_template())
        self.record("reboot", effective=effective, **entry)
        self.mutated("reboot")
        if effective and ext["phase"] == "up":
            ext["phase"], ext["until"] = "going-down", NOW() + TIMING["reboot_down"]
        return None

    def run_reboot_pod(self, pod, name):
        """The reboot pod of `rollout --reboot-via node` runs on its node (Ready, as a kubelet
        starts it): `systemctl reboot` in the host's namespaces reboots the node as
        RebootInstance does (recorded as a `reboot` via node-pod, attributed to the token that
        created the pod); the pod ends Succeeded. A pod that cannot reboot ends Failed."""
        n = self.nodes[name]
        ext = self.ext[name]
        agent = self.agent
        self.agent = pod.get("by")
        live = n["spec"].get("providerID", "")
        entry = {"node": name, "via": "node-pod", "pod": pod["metadata"]["name"],
                 "instance": live.split(".")[-1], "region": live.rsplit(".", 1)[0] if "." in live else "",
                 "live_provider_id": live, "provider_id_matches": True,
                 "cordoned": bool(n["spec"].get("unschedulable")),
                 "drained": self.drained(name),
                 "ours": MARK in n["metadata"].get("annotations", {}),
                 "module": copy.deepcopy(ext["module"]),
                 "ours_cordoned": self.ours_cordoned()}
        problem = reboot_pod_problem(pod)
        if problem is None and self.faults.get((name, "reboot_refused")):
            problem = "Failed to reboot system via logind: Transaction is destructive."
        if problem is not None:
            self.record("reboot-refused", problem=problem, **entry)
            self.pod_ends(pod, 1, "Error")
            self.agent = agent
            return
        effective = not self.faults.get((name, "reboot_never"))
        entry.update(self.installer_template())
        self.record("reboot", effective=effective, **entry)
        self.pod_ends(pod, 0, "Completed")
        self.mutated("reboot")
        if effective and ext["phase"] == "up":
            ext["phase"], ext["until"] = "going-down", NOW() + TIMING["reboot_down"]
        self.agent = agent

    def pod_ends(self, pod, code, reason):
        pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
        pod["status"]["conditions"][0]["status"] = "False"
        pod["status"]["conditions"][0]["reason"] = "PodCompleted"
        pod["ready_at"] = float("inf")
        pod["status"]["containerStatuses"] = [
            {"name": c["name"], "image": c.get("image", ""), "ready": False, "restartCount": 0,
             "state": {"terminated": {"exitCode": code, "reason": reason,
                                      "startedAt": rfc3339(), "finishedAt": rfc3339()}}}
            for c in pod["spec"].get("containers", [])]
        self.touch(pod)

    def create_pod(self, ns, pod):
        """POST /api/v1/namespaces/NS/pods: stored Pending; scheduled only by spec.nodeName (no
        scheduler): on a node that exists it starts once the node is Ready, elsewhere it stays
        Pending."""
        meta = pod.setdefault("metadata", {})
        meta.update({"namespace": ns, "uid": str(uuid.uuid4()), "creationTimestamp": rfc3339()})
        meta.pop("resourceVersion", None)
        spec = pod.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        pod["status"] = {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}],
                         "containerStatuses": [{"name": c.get("name", ""), "image": c.get("image", ""),
                                                "ready": False, "restartCount": 0,
                                                "state": {"waiting": {"reason": "ContainerCreating"}}}
                                               for c in spec.get("containers", [])]}
        pod["ready_at"] = NOW() + TIMING["pod_ready"] if spec.get("nodeName") in self.nodes else float("inf")
        pod["by"] = self.agent
        self.pods[(ns, meta["name"])] = pod
        self.touch(pod)
        self.record("create-pod", pod=meta["name"], namespace=ns, node=spec.get("nodeName"),
                    reboot_pod=is_reboot_pod(pod))
        return pod

    # ---- the admin channel ---------------------------------------------------------------

    def summary(self):
        out = {}
        for name, n in self.nodes.items():
            ext = self.ext[name]
            out[name] = {
                "uid": n["metadata"]["uid"], "providerID": n["spec"].get("providerID"),
                "unschedulable": bool(n["spec"].get("unschedulable")),
                "annotations": n["metadata"].get("annotations", {}),
                "ready": self.node_ready(name), "bootID": n["status"]["nodeInfo"]["bootID"],
                "module": ext["module"], "phase": ext["phase"],
                "workloads": sum(1 for p in self.pods_on(name) if self.ds_of(p) is None),
                "installers": [{"name": p["metadata"]["name"], "policy": self.pod_policy(p),
                                "image": p["spec"]["containers"][0]["image"],
                                "ready": p["status"]["conditions"][0]["status"] == "True",
                                "deleting": "deletionTimestamp" in p["metadata"]}
                               for p in self.pods_on(name) if self.ds_of(p) is not None],
            }
        return out


def admin(worlds, req):
    """One admin request (a JSON object) -> a JSON answer."""
    with LOCK:
        op = req.get("op")
        w = worlds.get(req.get("cluster", "")) if req.get("cluster") else None
        if op == "reboot":  # the aliyun stub
            found = ECS.instances.get(req["instance"])
            if found is None:
                return {"error": "InvalidInstanceId.NotFound"}
            world, name = found
            err = world.reboot(name, req["instance"], req.get("region", ""), req.get("dry_run"),
                               req.get("agent"))
            ECS.reboots.append({"instance": req["instance"], "region": req.get("region", ""),
                                "dry_run": bool(req.get("dry_run")), "error": err,
                                "cluster": world.name, "node": name, "t": round(NOW(), 3)})
            return {"error": err} if err else {"ok": True, "RequestId": str(uuid.uuid4())}
        if op == "fault":
            w.set_fault(req)
            return {"ok": True}
        if op == "clear":
            w.clear_faults(req.get("restore_policy"))
            return {"ok": True}
        if op == "recover":  # a node NotReady from the start comes back (the kubelet recovers)
            n = w.nodes.get(req["node"])
            if n is not None and not w.node_ready(req["node"]):
                w.set_ready(n, True)
                for p in w.pods_on(req["node"]):
                    p["ready_at"] = NOW() + TIMING["pod_ready"]
                w.touch(n)
                w.record("recovered", node=req["node"])
            return {"ok": True}
        if op == "label":  # another actor labels a node (value None: removes the label)
            n = w.nodes.get(req["node"])
            if n is not None:
                labels = n["metadata"]["labels"]
                if req.get("value") is None:
                    labels.pop(req["key"], None)
                else:
                    labels[req["key"]] = req["value"]
                w.touch(n)
                w.agent = None
                w.record("labelled", node=req["node"], key=req["key"], value=req.get("value"))
            return {"ok": True}
        if op == "mark_down":  # an earlier run left the node cordoned, marked and NotReady
            n = w.nodes.get(req["node"])
            if n is not None:
                n["spec"]["unschedulable"] = True
                n["metadata"].setdefault("annotations", {})[MARK] = "true"
                w.set_ready(n, False)
                for p in w.pods_on(req["node"]):
                    p["status"]["conditions"][0]["status"] = "False"
                    p["ready_at"] = float("inf")
                w.touch(n)
                w.agent = None
                w.record("marked-down", node=req["node"])
            return {"ok": True}
        if op == "kured":  # kured takes (or frees) its lock on a node
            w.set_kured_lock(req.get("node"))
            return {"ok": True}
        if op == "apply":  # helm upgrade: the DaemonSet's template changes
            w.set_template(w.daemonsets[req.get("daemonset", "cgpu-installer")],
                           req.get("policy"), req.get("image"))
            w.agent = None
            w.record("applied", policy=req.get("policy"), image=req.get("image"),
                     daemonset=req.get("daemonset", "cgpu-installer"))
            return {"ok": True}
        if op == "settle":  # wait until the controllers have nothing left to do
            deadline = NOW() + float(req.get("timeout", 10))
        elif op == "state":
            return {"nodes": w.summary(), "history": w.history, "mutations": w.mutations,
                    "reboots": ECS.reboots, "rv": w.rv,
                    "leases": {k: kindless(v) for k, v in w.leases.items()},
                    "daemonsets": {k: {"generation": v["metadata"]["generation"],
                                       "policy": w.pod_policy(v["spec"]["template"]),
                                       "image": v["spec"]["template"]["spec"]["containers"][0]["image"]}
                                   for k, v in w.daemonsets.items()}}
        else:
            return {"error": "unknown op %r" % op}
    while NOW() < deadline:
        with LOCK:
            w.controller()
            busy = any(e["phase"] != "up" for e in w.ext.values()) or any(
                "deletionTimestamp" in p["metadata"] or
                (p["status"]["conditions"][0]["status"] != "True" and p.get("ready_at", 0) != float("inf")
                 and not finished(p) and w.node_ready(p["spec"].get("nodeName"))
                 and not w.faults.get((p["spec"].get("nodeName"), "installer_never_ready")))
                for p in w.pods.values())
        if not busy:
            return {"ok": True}
        time.sleep(0.05)
    return {"error": "not settled"}


# ---- discovery ------------------------------------------------------------------------------

def discovery_extra():
    """What the runbook adds to fake_apiserver.py's discovery documents."""
    core = [
        {"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy",
         "version": "v1", "kind": "Eviction", "verbs": ["create"]},
        {"name": "pods/exec", "singularName": "", "namespaced": True, "kind": "PodExecOptions",
         "verbs": ["create", "get"]},
        {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
        {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event",
         "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                   "watch"], "shortNames": ["ev"]},
    ]
    policy_group = {"name": "policy", "versions": [{"groupVersion": "policy/v1", "version": "v1"}],
                    "preferredVersion": {"groupVersion": "policy/v1", "version": "v1"}}
    policy = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "policy/v1",
              "resources": [{"name": "poddisruptionbudgets", "singularName": "poddisruptionbudget",
                             "namespaced": True, "kind": "PodDisruptionBudget",
                             "verbs": ["create", "delete", "deletecollection", "get", "list",
                                       "patch", "update", "watch"], "shortNames": ["pdb"]}]}
    return core, policy_group, policy


def coordination_discovery():
    """coordination.k8s.io/v1: the group and its Lease resource, as the API server lists them."""
    group = {"name": "coordination.k8s.io",
             "versions": [{"groupVersion": "coordination.k8s.io/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "coordination.k8s.io/v1", "version": "v1"}}
    resources = {"kind": "APIResourceList", "apiVersion": "v1",
                 "groupVersion": "coordination.k8s.io/v1",
                 "resources": [{"name": "leases", "singularName": "lease", "namespaced": True,
                                "kind": "Lease", "verbs": ["create", "delete", "deletecollection",
                                                           "get", "list", "patch", "update",
                                                           "watch"]}]}
    return group, resources


# ---- requests -------------------------------------------------------------------------------

def kindless(obj):
    o = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion", "ready_at", "gone_at", "by")}
    return o


def public(obj, kind, api="v1"):
    o = kindless(obj)
    o["kind"] = kind
    o["apiVersion"] = api
    return o


class Request:
    def __init__(self, handler):
        self.h = handler
        u = urlsplit(handler.path)
        self.q = {k: v[0] for k, v in parse_qs(u.query).items()}
        self.qall = parse_qs(u.query)
        self.parts = u.path.rstrip("/").strip("/").split("/")


def read_body(handler):
    """The request body, by Content-Length or chunked (kubectl streams `create --raw -f -`)."""
    if "chunked" in handler.headers.get("Transfer-Encoding", "").lower():
        out = b""
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return out
            out += handler.rfile.read(size)
            handler.rfile.readline()
    length = int(handler.headers.get("Content-Length", "0") or 0)
    return handler.rfile.read(length) if length else b""


def handle(world, handler, disc):
    """Serve one authenticated request; returns (code, body) or None when it answered itself
    (watch, exec)."""
    r = Request(handler)
    method = handler.command
    parts = r.parts
    body = read_body(handler)
    with LOCK:
        world.controller()
    if method == "GET" and r.q.get("watch") in ("true", "1"):
        return watch(world, handler, r)
    if method == "GET" and len(parts) == 7 and parts[:3] == ["api", "v1", "namespaces"] \
            and parts[4] == "pods" and parts[6] in ("exec", "attach"):
        return exec_ws(world, handler, r, parts[3], parts[5])
    with LOCK:
        auth = handler.headers.get("Authorization", "")
        world.agent = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        return route(world, method, r, parts, body, handler)


def route(world, method, r, parts, body, handler):
    ctype = handler.headers.get("Content-Type", "")
    # nodes
    if parts[:3] == ["api", "v1", "nodes"]:
        if len(parts) == 3 and method == "GET":
            return list_of(world, "nodes", None, r.q)
        if len(parts) == 4:
            name = parts[3]
            n = world.nodes.get(name)
            if n is None:
                return status(404, "NotFound", 'nodes "%s" not found' % name,
                              {"name": name, "kind": "nodes"})
            if method == "GET":
                return 200, public(n, "Node")
            if method == "PATCH":
                return patch_node(world, n, body, ctype)
    if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 4 and method == "GET":
        ns = parts[3]
        if ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            uid = world.ns_uid if ns == "kube-system" else hashlib.md5(
                (world.ns_uid + ns).encode()).hexdigest()
            return 200, {"kind": "Namespace", "apiVersion": "v1",
                         "metadata": {"name": ns, "uid": uid, "resourceVersion": "17",
                                      "creationTimestamp": "2025-06-18T02:05:11Z",
                                      "labels": {"kubernetes.io/metadata.name": ns}},
                         "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
        return status(404, "NotFound", 'namespaces "%s" not found' % ns,
                      {"name": ns, "kind": "namespaces"})
    # pods
    if parts == ["api", "v1", "pods"] and method == "GET":
        return list_of(world, "pods", None, r.q)
    if parts[:3] == ["api", "v1", "namespaces"] and len(parts) >= 5 and parts[4] == "pods":
        ns = parts[3]
        if len(parts) == 5 and method == "GET":
            return list_of(world, "pods", ns, r.q)
        if len(parts) == 5 and method == "POST":
            return post_pod(world, ns, body)
        if len(parts) == 5 and method == "DELETE":
            return delete_pods(world, ns, r.q)
        if len(parts) >= 6:
            key = (ns, parts[5])
            pod = world.pods.get(key)
            if pod is None:
                return status(404, "NotFound", 'pods "%s" not found' % parts[5],
                              {"name": parts[5], "kind": "pods"})
            if len(parts) == 6 and method == "GET":
                return 200, public(pod, "Pod")
            if len(parts) == 6 and method == "DELETE":
                return 200, public(delete_one_pod(world, key, pod), "Pod")
            if len(parts) == 7 and parts[6] == "eviction" and method == "POST":
                return evict(world, key, pod, body)
    # policy/v1
    if parts[:3] == ["apis", "policy", "v1"] and method == "GET":
        if parts[3:] == ["poddisruptionbudgets"] or (len(parts) == 6 and parts[5] == "poddisruptionbudgets"):
            ns = parts[4] if len(parts) == 6 else None
            items = [kindless(p) for p in world.pdbs if ns is None or p["metadata"]["namespace"] == ns]
            return 200, {"kind": "PodDisruptionBudgetList", "apiVersion": "policy/v1",
                         "metadata": {"resourceVersion": str(world.rv)}, "items": items}
    # daemonsets
    if parts[:4] == ["apis", "apps", "v1", "namespaces"] and len(parts) >= 6 and parts[5] == "daemonsets" \
            and method == "GET":
        objs = world.daemonsets if parts[4] == "kube-system" else {}
        if len(parts) == 6:
            return 200, {"kind": "DaemonSetList", "apiVersion": "apps/v1",
                         "metadata": {"resourceVersion": str(world.rv)},
                         "items": [kindless(o) for o in objs.values()]}
        if len(parts) == 7:
            if parts[6] not in objs:
                return status(404, "NotFound", 'daemonsets.apps "%s" not found' % parts[6],
                              {"name": parts[6], "group": "apps", "kind": "daemonsets"})
            return 200, public(objs[parts[6]], "DaemonSet", "apps/v1")
    if parts[:3] == ["apis", "apps", "v1"] and parts[3:] == ["daemonsets"] and method == "GET":
        return 200, {"kind": "DaemonSetList", "apiVersion": "apps/v1",
                     "metadata": {"resourceVersion": str(world.rv)},
                     "items": [kindless(o) for o in list(world.daemonsets.values())
                               + list(world.listed_daemonsets.values())]}
    # core/v1 Events: created (generateName) and listed; kept for the history.
    if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 5 and parts[4] == "events":
        if method == "POST":
            try:
                ev = json.loads(body or b"{}")
            except ValueError as e:
                return status(400, "BadRequest", "error decoding the body: %s" % e)
            meta = ev.setdefault("metadata", {})
            if not meta.get("name"):
                meta["name"] = meta.get("generateName", "event.") + uuid.uuid4().hex[:8]
            meta.update({"namespace": parts[3], "uid": str(uuid.uuid4()),
                         "creationTimestamp": rfc3339()})
            world.events.append(ev)
            world.touch(ev)
            obj = ev.get("involvedObject") or {}
            world.record("event", node=obj.get("name"), kind=obj.get("kind"),
                         reason=ev.get("reason"), message=ev.get("message"))
            return 201, public(ev, "Event")
        if method == "GET":
            items = [kindless(e) for e in world.events
                     if e["metadata"]["namespace"] == parts[3]
                     and field_match(r.q.get("fieldSelector", ""), e)]
            return 200, {"kind": "EventList", "apiVersion": "v1",
                         "metadata": {"resourceVersion": str(world.rv)}, "items": items}
    if parts == ["api", "v1", "events"] and method == "GET":
        items = [kindless(e) for e in world.events if field_match(r.q.get("fieldSelector", ""), e)]
        return 200, {"kind": "EventList", "apiVersion": "v1",
                     "metadata": {"resourceVersion": str(world.rv)}, "items": items}
    if parts[:4] == ["apis", "coordination.k8s.io", "v1", "namespaces"] and len(parts) >= 6 \
            and parts[5] == "leases":
        return leases(world, method, parts, body)
    found = stored_resource(parts)
    if found is not None:
        return stored(world, method, found, body, ctype, r.q)
    if method not in ("GET",):
        return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    return status(404, "NotFound", "the server could not find the requested resource")


def delete_one_pod(world, key, pod):
    if not pod["spec"].get("nodeName") or pod["spec"]["nodeName"] not in world.nodes:
        world.delete_pod(key, grace=False)  # no kubelet to wait for: gone at once
    else:
        world.delete_pod(key)
    world.record("delete-pod", pod=key[1], node=pod["spec"].get("nodeName"),
                 installer=world.ds_of(pod) is not None, reboot_pod=is_reboot_pod(pod),
                 **world.installer_template())
    world.mutated("delete")
    return world.pods.get(key, pod)


def post_pod(world, ns, body):
    """Create a pod (`kubectl create -f -`): the name is unique in its namespace (409
    AlreadyExists), required (422) unless generateName gives one."""
    if ns not in ("default", "kube-system", "kube-public", "kube-node-lease"):
        return status(404, "NotFound", 'namespaces "%s" not found' % ns, {"name": ns, "kind": "namespaces"})
    try:
        pod = json.loads(body or b"{}")
    except ValueError as e:
        return status(400, "BadRequest", "error decoding the body: %s" % e)
    if not isinstance(pod, dict) or pod.get("kind") != "Pod":
        return status(400, "BadRequest", "the body is not a Pod")
    meta = pod.setdefault("metadata", {})
    if meta.get("namespace") not in (None, "", ns):
        return status(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + world.suffix()
    name = meta.get("name", "")
    if not name:
        return status(422, "Invalid", 'Pod "" is invalid: metadata.name: Required value: name or generateName is required',
                      {"kind": "Pod", "causes": [{"reason": "FieldValueRequired", "message": "Required value: name or generateName is required", "field": "metadata.name"}]})
    if not (pod.get("spec") or {}).get("containers"):
        return status(422, "Invalid", 'Pod "%s" is invalid: spec.containers: Required value' % name,
                      {"name": name, "kind": "Pod"})
    if (ns, name) in world.pods:
        world.record("create-pod-refused", pod=name, namespace=ns)
        return status(409, "AlreadyExists", 'pods "%s" already exists' % name, {"name": name, "kind": "pods"})
    world.create_pod(ns, pod)
    world.mutated("create")
    return 201, public(pod, "Pod")


def delete_pods(world, ns, q):
    """DELETE collection (deletecollection): every pod of the namespace the selectors match; the
    answer lists them, as the API server does."""
    keys = sorted(k for k, p in world.pods.items() if k[0] == ns
                  and label_match(q.get("labelSelector", ""), p["metadata"].get("labels", {}))
                  and field_match(q.get("fieldSelector", ""), p))
    items = [kindless(delete_one_pod(world, k, world.pods[k])) for k in keys]
    return 200, {"kind": "PodList", "apiVersion": "v1",
                 "metadata": {"resourceVersion": str(world.rv)}, "items": items}


# The objects `kubectl apply -f` of the generated rollout Job creates, kept as sent:
# resource -> (group/version path, kind, namespaced).
STORED = {
    "serviceaccounts": ("api/v1", "ServiceAccount", True),
    "roles": ("apis/rbac.authorization.k8s.io/v1", "Role", True),
    "rolebindings": ("apis/rbac.authorization.k8s.io/v1", "RoleBinding", True),
    "clusterroles": ("apis/rbac.authorization.k8s.io/v1", "ClusterRole", False),
    "clusterrolebindings": ("apis/rbac.authorization.k8s.io/v1", "ClusterRoleBinding", False),
    "jobs": ("apis/batch/v1", "Job", True),
}


def stored_resource(parts):
    """(resource, namespace or None, name or None) of a path to one of STORED, or None."""
    for res, (gv, _, namespaced) in STORED.items():
        prefix = gv.split("/")
        rest = parts[len(prefix):]
        if parts[:len(prefix)] != prefix:
            continue
        if namespaced and len(rest) in (3, 4) and rest[0] == "namespaces" and rest[2] == res:
            return res, rest[1], rest[3] if len(rest) == 4 else None
        if namespaced and rest == [res]:  # the list across namespaces
            return res, None, None
        if not namespaced and len(rest) in (1, 2) and rest[0] == res:
            return res, None, rest[1] if len(rest) == 2 else None
    return None


def stored(world, method, found, body, ctype, q):
    res, ns, name = found
    gv, kind, namespaced = STORED[res]
    api = gv.split("/", 1)[1] if gv.startswith("apis/") else "v1"
    group = api.split("/")[0] if "/" in api else ""
    what = res + ("." + group if group else "")
    if namespaced and ns is not None and ns not in ("default", "kube-system", "kube-public", "kube-node-lease"):
        return status(404, "NotFound", 'namespaces "%s" not found' % ns, {"name": ns, "kind": "namespaces"})
    if name is None and method == "GET":
        items = [kindless(o) for (r, n, _), o in sorted(world.stored.items())
                 if r == res and (ns is None or n == ns)
                 and label_match(q.get("labelSelector", ""), o["metadata"].get("labels", {}))]
        return 200, {"kind": kind + "List", "apiVersion": api,
                     "metadata": {"resourceVersion": str(world.rv)}, "items": items}
    if name is None and method == "POST":
        try:
            obj = json.loads(body or b"{}")
        except ValueError as e:
            return status(400, "BadRequest", "error decoding the body: %s" % e)
        if not isinstance(obj, dict) or obj.get("kind") != kind or obj.get("apiVersion") != api:
            return status(400, "BadRequest", "the body is not a %s of %s" % (kind, api))
        meta = obj.setdefault("metadata", {})
        if namespaced and meta.get("namespace") not in (None, "", ns):
            return status(400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request")
        name = meta.get("name", "")
        if not name:
            return status(422, "Invalid", '%s "" is invalid: metadata.name: Required value: name or generateName is required' % kind,
                          {"kind": kind, "group": group})
        key = (res, ns if namespaced else None, name)
        if key in world.stored:
            return status(409, "AlreadyExists", '%s "%s" already exists' % (what, name),
                          {"name": name, "group": group, "kind": res})
        meta.update({"uid": str(uuid.uuid4()), "creationTimestamp": rfc3339(), "generation": 1})
        if namespaced:
            meta["namespace"] = ns
        meta.pop("resourceVersion", None)
        world.stored[key] = obj
        world.touch(obj)
        world.record("create", resource=res, namespace=ns if namespaced else None, name=name)
        return 201, public(obj, kind, api)
    if name is None:
        return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    key = (res, ns if namespaced else None, name)
    cur = world.stored.get(key)
    if cur is None:
        return status(404, "NotFound", '%s "%s" not found' % (what, name),
                      {"name": name, "group": group, "kind": res})
    if method == "GET":
        return 200, public(cur, kind, api)
    if method in ("PATCH", "PUT"):
        try:
            patch = json.loads(body or b"{}")
        except ValueError as e:
            return status(400, "BadRequest", "error decoding the body: %s" % e)
        if method == "PATCH":
            if not any(t in ctype for t in ("application/strategic-merge-patch+json",
                                            "application/merge-patch+json")):
                return status(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json")
            new = merge_patch(cur, patch)
        else:
            rv = (patch.get("metadata") or {}).get("resourceVersion")
            if rv and rv != cur["metadata"]["resourceVersion"]:
                return status(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been modified; please apply your changes to the latest version and try again' % (what, name))
            new = patch
        for k in ("name", "namespace", "uid", "creationTimestamp"):
            if k in cur["metadata"]:
                new.setdefault("metadata", {})[k] = cur["metadata"][k]
        new["metadata"]["generation"] = cur["metadata"].get("generation", 1) + (new.get("spec") != cur.get("spec"))
        world.stored[key] = new
        world.touch(new)
        world.record("update", resource=res, namespace=key[1], name=name, method=method)
        return 200, public(new, kind, api)
    if method == "DELETE":
        del world.stored[key]
        world.touch(cur)
        world.record("delete", resource=res, namespace=key[1], name=name)
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                     "details": {"name": name, "group": group, "kind": res, "uid": cur["metadata"]["uid"]}}
    return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def stored_discovery():
    """The groups (rbac.authorization.k8s.io/v1, batch/v1) and resources of STORED, as the API
    server lists them; ServiceAccounts go into /api/v1."""
    verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    core = []
    by_gv = {}
    for res, (gv, kind, namespaced) in STORED.items():
        entry = {"name": res, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
                 "verbs": verbs}
        if res == "serviceaccounts":
            entry["shortNames"] = ["sa"]
            core.append(entry)
            continue
        if res == "jobs":
            entry["categories"] = ["all"]
        by_gv.setdefault(gv.split("/", 1)[1], []).append(entry)
    groups = []
    for api, resources in by_gv.items():
        group, version = api.split("/")
        groups.append(({"name": group, "versions": [{"groupVersion": api, "version": version}],
                        "preferredVersion": {"groupVersion": api, "version": version}},
                       "/apis/" + api,
                       {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api,
                        "resources": resources}))
    return core, groups


def leases(world, method, parts, body):
    """Leases as the API server keeps them: the name is unique (create → 409 AlreadyExists), an
    update names the resourceVersion it read (stale → 409 Conflict), and every write moves the
    resourceVersion on."""
    ns = parts[4]
    if ns != "kube-system":
        return status(404, "NotFound", 'namespaces "%s" not found' % ns, {"name": ns, "kind": "namespaces"})
    res = "leases.coordination.k8s.io"
    if len(parts) == 6 and method == "GET":
        return 200, {"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                     "metadata": {"resourceVersion": str(world.rv)},
                     "items": [kindless(o) for o in world.leases.values()]}
    try:
        obj = json.loads(body) if body else {}
    except ValueError as e:
        return status(400, "BadRequest", "error decoding the body: %s" % e)
    if len(parts) == 6 and method == "POST":
        if "create leases" in world.forbid:
            return status(403, "Forbidden", 'leases.coordination.k8s.io is forbidden: User "cgpu-operator" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "kube-system"',
                          {"group": "coordination.k8s.io", "kind": "leases"})
        name = (obj.get("metadata") or {}).get("name", "")
        if not name:
            return status(422, "Invalid", "Lease.coordination.k8s.io \"\" is invalid: metadata.name: Required value")
        if name in world.leases:
            world.record("lease-create-refused", lease=name)
            return status(409, "AlreadyExists", '%s "%s" already exists' % (res, name),
                          {"name": name, "group": "coordination.k8s.io", "kind": "leases"})
        obj["metadata"].update({"namespace": ns, "uid": str(uuid.uuid4()),
                                "creationTimestamp": rfc3339()})
        obj["metadata"].pop("resourceVersion", None)
        world.leases[name] = obj
        world.touch(obj)
        world.record("lease-create", lease=name, holder=(obj.get("spec") or {}).get("holderIdentity"))
        return 201, public(obj, "Lease", "coordination.k8s.io/v1")
    if len(parts) != 7:
        return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    name = parts[6]
    cur = world.leases.get(name)
    if cur is None:
        return status(404, "NotFound", '%s "%s" not found' % (res, name),
                      {"name": name, "group": "coordination.k8s.io", "kind": "leases"})
    if method == "GET":
        return 200, public(cur, "Lease", "coordination.k8s.io/v1")
    if method == "PUT":
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv and rv != cur["metadata"]["resourceVersion"]:
            world.record("lease-conflict", lease=name, holder=(obj.get("spec") or {}).get("holderIdentity"))
            return status(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been modified; please apply your changes to the latest version and try again' % (res, name),
                          {"name": name, "group": "coordination.k8s.io", "kind": "leases"})
        for k in ("uid", "creationTimestamp", "namespace"):
            obj["metadata"][k] = cur["metadata"][k]
        was = (cur.get("spec") or {}).get("holderIdentity")
        world.leases[name] = obj
        world.touch(obj)
        world.record("lease-update", lease=name, holder=(obj.get("spec") or {}).get("holderIdentity"), was=was)
        return 200, public(obj, "Lease", "coordination.k8s.io/v1")
    if method == "DELETE":
        del world.leases[name]
        world.touch(cur)
        world.record("lease-delete", lease=name, holder=(cur.get("spec") or {}).get("holderIdentity"))
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                     "details": {"name": name, "group": "coordination.k8s.io", "kind": "leases",
                                 "uid": cur["metadata"]["uid"]}}
    return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def objects(world, kind, ns):
    if kind == "nodes":
        return list(world.nodes.values())
    return [p for p in world.pods.values() if ns is None or p["metadata"]["namespace"] == ns]


def list_of(world, kind, ns, q):
    items = [kindless(o) for o in objects(world, kind, ns)
             if label_match(q.get("labelSelector", ""), o["metadata"].get("labels", {}))
             and field_match(q.get("fieldSelector", ""), o)]
    items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
    return 200, {"kind": "NodeList" if kind == "nodes" else "PodList", "apiVersion": "v1",
                 "metadata": {"resourceVersion": str(world.rv)}, "items": items}


def patch_node(world, n, body, ctype):
    if not any(t in ctype for t in ("application/strategic-merge-patch+json",
                                    "application/merge-patch+json")):
        return status(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json")
    try:
        patch = json.loads(body or b"{}")
    except ValueError as e:
        return status(400, "BadRequest", "error decoding patch: %s" % e)
    uid = (patch.get("metadata") or {}).get("uid")
    if uid and uid != n["metadata"]["uid"]:
        # As the API server answers a patch that would change the UID: the object named is not
        # the one the client read (replaced under the same name).
        world.record("patch-node-refused", node=n["metadata"]["name"], uid=uid)
        return status(409, "Conflict", 'Operation cannot be fulfilled on nodes "%s": Precondition failed: UID in precondition: %s, UID in object meta: %s' % (n["metadata"]["name"], uid, n["metadata"]["uid"]))
    rv = (patch.get("metadata") or {}).get("resourceVersion")
    if rv and rv != n["metadata"]["resourceVersion"]:
        return status(409, "Conflict", 'Operation cannot be fulfilled on nodes "%s": the object has been modified; please apply your changes to the latest version and try again' % n["metadata"]["name"])
    name = n["metadata"]["name"]
    before = (bool(n["spec"].get("unschedulable")), MARK in n["metadata"].get("annotations", {}))
    new = merge_patch(n, patch)
    for k in ("name", "uid"):
        new["metadata"][k] = n["metadata"][k]
    n.clear()
    n.update(new)
    world.touch(n)
    after = (bool(n["spec"].get("unschedulable")), MARK in n["metadata"].get("annotations", {}))
    ext = world.ext[name]
    world.record("patch-node", node=name, patch=patch, content_type=ctype.split(";")[0],
                 unschedulable=after[0], mark=after[1], was=list(before),
                 module=copy.deepcopy(ext["module"]), ours_cordoned=world.ours_cordoned())
    world.mutated("patch")
    return 200, public(n, "Node")


def evict(world, key, pod, body):
    try:
        ev = json.loads(body or b"{}")
    except ValueError:
        ev = {}
    if ev.get("kind") != "Eviction":
        return status(400, "BadRequest", "not an Eviction")
    if "deletionTimestamp" not in pod["metadata"]:
        for pdb in world.pdbs:
            if pdb["metadata"]["namespace"] != pod["metadata"]["namespace"]:
                continue
            if not all(pod["metadata"].get("labels", {}).get(k) == v
                       for k, v in pdb["spec"]["selector"].get("matchLabels", {}).items()):
                continue
            if pdb["status"]["disruptionsAllowed"] <= 0:
                world.record("evict-refused", pod=key[1], node=pod["spec"].get("nodeName"),
                             pdb=pdb["metadata"]["name"])
                return status(429, "TooManyRequests",
                              "Cannot evict pod as it would violate the pod's disruption budget.",
                              {"causes": [{"reason": "DisruptionBudget",
                                           "message": "The disruption budget %s needs %d healthy pods and has %d currently"
                                           % (pdb["metadata"]["name"], 1, 1)}]})
    world.delete_pod(key)
    world.record("evict", pod=key[1], node=pod["spec"].get("nodeName"))
    world.mutated("evict")
    return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


# ---- watch ----------------------------------------------------------------------------------

def watch(world, h, r):
    parts = r.parts
    if parts[:3] == ["api", "v1", "nodes"] and len(parts) == 3:
        kind, ns = "nodes", None
    elif parts == ["api", "v1", "pods"]:
        kind, ns = "pods", None
    elif parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 5 and parts[4] == "pods":
        kind, ns = "pods", parts[3]
    else:
        return status(405, "MethodNotAllowed", "watch is not supported here")
    obj_kind = "Node" if kind == "nodes" else "Pod"
    lsel, fsel = r.q.get("labelSelector", ""), r.q.get("fieldSelector", "")
    timeout = min(float(r.q.get("timeoutSeconds", "60") or 60), 120)
    try:
        since = int(r.q.get("resourceVersion", "0") or 0)
    except ValueError:
        since = 0

    def matching():
        return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
                for o in objects(world, kind, ns)
                if label_match(lsel, o["metadata"].get("labels", {})) and field_match(fsel, o)}

    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()

    def send(ev_type, obj):
        data = (json.dumps({"type": ev_type, "object": public(obj, obj_kind)}) + "\n").encode()
        h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()

    seen = {}
    initial = r.q.get("sendInitialEvents") == "true"
    with LOCK:
        world.controller()
        cur = matching()
        for k, o in cur.items():
            rv = int(o["metadata"]["resourceVersion"])
            if initial or since == 0:
                send("ADDED", o)
            elif rv > since:
                send("MODIFIED", o)
            seen[k] = rv
        if initial:
            send("BOOKMARK", {"metadata": {"resourceVersion": str(world.rv),
                                           "annotations": {"k8s.io/initial-events-end": "true"}}})
        for rv, tk, o in world.tombstones:
            if tk == kind and rv > since > 0 and not initial:
                k = (o["metadata"].get("namespace", ""), o["metadata"]["name"])
                if k not in cur:
                    send("DELETED", o)
    end = NOW() + timeout
    try:
        while NOW() < end:
            time.sleep(0.1)
            with LOCK:
                world.controller()
                cur = matching()
                for k, o in cur.items():
                    rv = int(o["metadata"]["resourceVersion"])
                    if k not in seen:
                        send("ADDED", o)
                    elif rv != seen[k]:
                        send("MODIFIED", o)
                    seen[k] = rv
                for k in [k for k in seen if k not in cur]:
                    gone = [o for _, tk, o in world.tombstones if tk == kind and
                            (o["metadata"].get("namespace", ""), o["metadata"]["name"]) == k]
                    if gone:
                        send("DELETED", gone[-1])
                    del seen[k]
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()
    except (BrokenPipeError, ConnectionResetError, OSError):
        pass
    h.close_connection = True
    return None


# ---- exec over WebSocket ----------------------------------------------------------------------

def ws_frame(payload, opcode=0x2):
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + struct.pack(">H", n)
    else:
        head += bytes([127]) + struct.pack(">Q", n)
    return head + payload


def ws_read(rfile):
    """One frame from the client (masked): (opcode, payload) or None at EOF."""
    b = rfile.read(2)
    if len(b) < 2:
        return None
    opcode = b[0] & 0x0F
    masked = b[1] & 0x80
    n = b[1] & 0x7F
    if n == 126:
        n = struct.unpack(">H", rfile.read(2))[0]
    elif n == 127:
        n = struct.unpack(">Q", rfile.read(8))[0]
    mask = rfile.read(4) if masked else b"\0\0\0\0"
    data = bytearray(rfile.read(n))
    for i in range(len(data)):
        data[i] ^= mask[i % 4]
    return opcode, bytes(data)


def exec_status(code, message=None):
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": message or "command terminated with non-zero exit code: error executing command [%s], exit code %d" % ("sh", code),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def run_in_node(world, node, command):
    """(stdout, stderr, exit code) of `command` in the installer pod on `node`."""
    if not command:
        return b"", b"", 1
    if command[0] != "nsenter":
        return b"", ("OCI runtime exec failed: exec: %r: executable file not found" % command[0]).encode(), 126
    try:
        rest = command[command.index("--") + 1:]
    except ValueError:
        return b"", b"nsenter: no command given\n", 1
    if "-t" not in command or command[command.index("-t") + 1] != "1":
        return b"", b"nsenter: not the host's namespaces\n", 1
    if len(rest) < 3 or rest[0] != "sh" or rest[1] != "-c":
        return b"", ("sh: %s: not found\n" % (rest[0] if rest else "")).encode(), 127
    with LOCK:
        module = copy.deepcopy(world.ext[node]["module"])
    root = tempfile.mkdtemp(prefix="cgpu-node-")
    try:
        proc = os.path.join(root, "cgpu_km")
        if module is not None:
            os.makedirs(proc)
            with open(os.path.join(proc, "version"), "w") as f:
                f.write(module["version"] + "\n")
            for i, p in enumerate(module["policies"]):
                os.makedirs(os.path.join(proc, str(i)))
                with open(os.path.join(proc, str(i), "policy"), "w") as f:
                    f.write(p + "\n")
        script = rest[2].replace("/proc/cgpu_km", proc)
        out = subprocess.run(["sh", "-c", script] + rest[3:], capture_output=True, timeout=20,
                             cwd=root, env={"PATH": "/usr/bin:/bin"})
        return (out.stdout.replace(proc.encode(), b"/proc/cgpu_km"),
                out.stderr.replace(proc.encode(), b"/proc/cgpu_km"), out.returncode)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def exec_ws(world, h, r, ns, name):
    with LOCK:
        pod = world.pods.get((ns, name))
        if pod is None:
            return status(404, "NotFound", 'pods "%s" not found' % name, {"name": name, "kind": "pods"})
        node = pod["spec"].get("nodeName")
        fail = world.faults.get((node, "exec_fail"))
        ready = node in world.nodes and world.node_ready(node)
        world.record("exec", pod=name, node=node, failed=bool(fail or not ready))
    if h.headers.get("Upgrade", "").lower() != "websocket":
        return status(400, "BadRequest", "Upgrade request required")
    offered = [p.strip() for p in h.headers.get("Sec-WebSocket-Protocol", "").split(",")]
    proto = next((p for p in PROTOCOLS if p in offered), None)
    if proto is None:
        return status(400, "BadRequest", "websocket: no supported subprotocol in %s" % offered)
    key = h.headers.get("Sec-WebSocket-Key", "")
    accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
    h.send_response(101, "Switching Protocols")
    h.send_header("Upgrade", "websocket")
    h.send_header("Connection", "Upgrade")
    h.send_header("Sec-WebSocket-Accept", accept)
    h.send_header("Sec-WebSocket-Protocol", proto)
    h.end_headers()
    h.wfile.flush()
    w = h.wfile
    if fail or not ready:
        out, err = b"", b""
        st = {"metadata": {}, "status": "Failure", "reason": "InternalError",
              "message": "Internal error occurred: error executing command in container: failed to exec in container: container is not running",
              "details": {"causes": [{"message": "container is not running"}]}, "code": 500}
    else:
        out, err, code = run_in_node(world, node, r.qall.get("command", []))
        st = exec_status(code)
    # The runtime takes a moment to start an exec; kubectl 1.33 registers its streams after the
    # handshake and drops data that comes before ("Unknown stream id"), as it would from a kubelet
    # that answered at once.
    time.sleep(0.1)
    try:
        if out:
            w.write(ws_frame(b"\x01" + out))
        if err:
            w.write(ws_frame(b"\x02" + err))
        w.write(ws_frame(b"\x03" + json.dumps(st).encode()))
        w.write(ws_frame(struct.pack(">H", 1000), opcode=0x8))
        w.flush()
        # read until the client's close (answer its pings meanwhile)
        h.connection.settimeout(5)
        while True:
            f = ws_read(h.rfile)
            if f is None or f[0] == 0x8:
                break
            if f[0] == 0x9:
                w.write(ws_frame(f[1], opcode=0xA))
                w.flush()
    except (OSError, ValueError, struct.error):
        pass
    h.close_connection = True
    return None
