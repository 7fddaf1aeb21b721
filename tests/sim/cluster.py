#!/usr/bin/env python3
"""A stateful stand-in for an ACK cluster with cGPU, for running the script that
`cgpu-lint checklist --format shell` prints. `kubectl` and `aliyun` on PATH are thin wrappers
around this file; the cluster lives in the JSON file named by $SIM_STATE and every call is
appended to $SIM_LOG (argv joined by 0x1f). Python 3 standard library only.

What it models (the parts the runbook depends on):
- nodes: bootID, Ready, spec.unschedulable, annotations, allocatable aliyun.com/gpu-mem, an ECS
  instance id, the cGPU module (loaded or not, version, one policy file per GPU);
- the cgpu-installer DaemonSet (POLICY, image, updateStrategy RollingUpdate or OnDelete) and its
  pods (each carries the POLICY of the template it was created from: RollingUpdate pods follow
  the DaemonSet, OnDelete pods keep theirs until deleted); cgpu-core-installer pods likewise;
- a reboot (aliyun ecs RebootInstance) is asynchronous: a few kubectl calls later the node goes
  Unknown, then comes back with a new bootID and the module reloaded with the POLICY of the
  node's installer pod; a node can be told to ignore N reboots (a reboot that never happens);
- kubectl drain evicts workload pods, or fails after its --timeout when a PodDisruptionBudget
  with no disruption allowed covers a pod on the node;
- kubectl exec runs the command for real with `sh`, against the node's /proc/cgpu_km written
  out as files; a node can be told to fail N execs;
- kubectl rollout status refuses OnDelete DaemonSets, as kubectl does;
- aliyun ecs RebootInstance --DryRun true answers the error code DryRunOperation (or
  Forbidden.RAM when the state says the caller lacks the permission);
- coordination.k8s.io Leases (`create -f -`, `replace -f -`, `get lease`, `delete lease`): a
  create of a taken name is AlreadyExists, a replace with a stale resourceVersion a Conflict,
  as the API server answers (the runbook's cluster lock);
- `get ds --all-namespaces` lists the installers and a kured DaemonSet when the state has one.
Time is counted in kubectl calls ("ticks"); `kubectl wait` advances it until its condition holds.
"""

import json
import os
import re
import sys

# subprocess, shutil and tempfile are imported where exec needs them: this file starts once per
# kubectl call, and start-up time is most of a test's time.

STATE = os.environ["SIM_STATE"]


def load():
    with open(STATE) as f:
        return json.load(f)


def save(st):
    tmp = STATE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(st, f, indent=1, sort_keys=True)
    os.replace(tmp, STATE)


def log(argv):
    path = os.environ.get("SIM_LOG")
    if path:
        with open(path, "a") as f:
            f.write("\x1f".join(argv) + "\n")


def fail(msg, code=1):
    sys.stderr.write(msg + "\n")
    sys.exit(code)


# ---------------------------------------------------------------- the cluster's objects


def node_obj(st, name):
    n = st["nodes"][name]
    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": n.get("labels", {}),
            "annotations": n.get("annotations", {}),
            "uid": n.get("uid", "uid-" + name),
        },
        "spec": {"providerID": n.get("provider", "cn-hangzhou." + n.get("instance", ""))},
        "status": {
            "conditions": [{"type": "Ready", "status": n["ready"]}],
            "nodeInfo": {"bootID": n["bootID"]},
            "allocatable": {"aliyun.com/gpu-mem": str(n.get("gpu_mem", 0))},
        },
    }
    if n.get("unschedulable"):
        obj["spec"]["unschedulable"] = True
    return obj


def pod_obj(p):
    container = {"name": p.get("container", p["labels"].get("name", "main"))}
    if "image" in p:
        container["image"] = p["image"]
    if "policy" in p:
        container["env"] = [{"name": "POLICY", "value": p["policy"]}]
    if p.get("gpu_mem"):
        container["resources"] = {"limits": {"aliyun.com/gpu-mem": str(p["gpu_mem"])}}
    meta = {
        "name": p["name"],
        "namespace": p["ns"],
        "labels": p["labels"],
        "ownerReferences": [{"kind": p.get("owner", "ReplicaSet")}],
    }
    if p.get("deleting"):
        meta["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"nodeName": p.get("node") or "", "containers": [container]},
        "status": {
            "phase": p.get("phase", "Running"),
            "conditions": [{"type": "Ready", "status": "True" if p.get("ready", True) else "False"}],
        },
    }


def ds_obj(st, name):
    ds = st["daemonsets"][name]
    pods = [p for p in st["pods"] if p["labels"].get("name") == name]
    ready = sum(1 for p in pods if p.get("ready", True) and st["nodes"][p["node"]]["ready"] == "True")
    return {
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"name": name}},
            "updateStrategy": {"type": ds["strategy"]},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": name,
                            "image": ds["image"],
                            "env": [{"name": "POLICY", "value": ds["policy"]}],
                        }
                    ]
                }
            },
        },
        "status": {"desiredNumberScheduled": len(ds["nodes"]), "numberReady": ready},
    } | {"metadata": {"name": name, "namespace": "kube-system",
                      "generation": ds.get("generation", 1)}}


def pdb_obj(b):
    return {
        "metadata": {"namespace": b["ns"], "name": b["name"]},
        "status": {"disruptionsAllowed": b["disruptionsAllowed"]},
    }


# ---------------------------------------------------------------- time and reboots


def tick(st):
    st["tick"] = st.get("tick", 0) + 1
    now = st["tick"]
    for name, n in st["nodes"].items():
        r = n.get("rebooting")
        if r is None:
            continue
        if now >= r + 1 and n["ready"] == "True":
            n["ready"] = "Unknown"
        if now >= r + 3:
            st["boots"] = st.get("boots", 0) + 1
            n["bootID"] = "boot-%s-%d" % (name, st["boots"])
            n["ready"] = "True"
            del n["rebooting"]
            # The installer pod on the node loads the module with the POLICY it carries.
            pod = installer_pod_of(st, name)
            if pod is not None:
                n["module"] = {
                    "loaded": True,
                    "version": pod["version"],
                    "policies": [pod["policy"]] * n.get("gpus", 1),
                }
            else:
                n["module"] = {"loaded": False}


def installer_pod_of(st, node):
    for p in st["pods"]:
        if p.get("node") == node and p.get("owner") == "DaemonSet" and not p.get("deleting"):
            if p["labels"].get("name") in ("cgpu-installer", "cgpu-core-installer"):
                return p
    return None


def new_pod_from(st, ds_name, node):
    ds = st["daemonsets"][ds_name]
    st["serial"] = st.get("serial", 0) + 1
    pod = {
        "name": "%s-new%04d" % (ds_name, st["serial"]),
        "ns": "kube-system",
        "node": node,
        "labels": {"name": ds_name},
        "container": ds_name,
        "owner": "DaemonSet",
        "policy": ds["policy"],
        "version": ds["version"],
        "image": ds["image"],
        "ready": True,
    }
    st["pods"].append(pod)
    n = st["nodes"][node]
    # A module not loaded yet is loaded by the new pod, with its POLICY (cGPU docs: the policy
    # takes effect at once where the module was not installed).
    if not n.get("module", {}).get("loaded"):
        n["module"] = {
            "loaded": True,
            "version": ds["version"],
            "policies": [ds["policy"]] * n.get("gpus", 1),
        }
    return pod


# ---------------------------------------------------------------- JSONPath (the kubectl subset)


def parse_template(t):
    """Split a kubectl JSONPath template into a tree of text, expressions and ranges."""
    parts = []
    i = 0
    while i < len(t):
        if t[i] == "{":
            j = i + 1
            depth = 0
            in_str = False
            while j < len(t):
                c = t[j]
                if c == '"' and t[j - 1] != "\\":
                    in_str = not in_str
                elif not in_str and c == "(":
                    depth += 1
                elif not in_str and c == ")":
                    depth -= 1
                elif not in_str and c == "}" and depth == 0:
                    break
                j += 1
            parts.append(("act", t[i + 1 : j].strip()))
            i = j + 1
        else:
            j = t.find("{", i)
            j = len(t) if j < 0 else j
            parts.append(("text", t[i:j]))
            i = j

    def build(pos):
        out = []
        while pos < len(parts):
            kind, val = parts[pos]
            if kind == "act" and val.startswith("range "):
                body, pos = build(pos + 1)
                out.append(("range", val[6:].strip(), body))
                continue
            if kind == "act" and val == "end":
                return out, pos + 1
            out.append((kind, val))
            pos += 1
        return out, pos

    tree, _ = build(0)
    return tree


def eval_path(expr, cur, root):
    vals = [root if expr.startswith("$") else cur]
    i = 1 if expr.startswith("$") else 0
    while i < len(expr):
        c = expr[i]
        if c == ".":
            i += 1
            name = ""
            while i < len(expr) and expr[i] not in ".[":
                if expr[i] == "\\" and i + 1 < len(expr):
                    name += expr[i + 1]
                    i += 2
                    continue
                name += expr[i]
                i += 1
            if name == "":
                continue
            nxt = []
            for v in vals:
                if isinstance(v, dict) and name in v:
                    nxt.append(v[name])
            vals = nxt
        elif c == "[":
            j = i
            depth = 0
            while j < len(expr):
                if expr[j] == "[":
                    depth += 1
                elif expr[j] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            inner = expr[i + 1 : j]
            i = j + 1
            nxt = []
            if inner == "*":
                for v in vals:
                    if isinstance(v, list):
                        nxt.extend(v)
                    elif isinstance(v, dict):
                        nxt.extend(v.values())
            elif re.fullmatch(r"-?\d+", inner):
                k = int(inner)
                for v in vals:
                    if isinstance(v, list) and -len(v) <= k < len(v):
                        nxt.append(v[k])
            elif inner.startswith("?(") and inner.endswith(")"):
                m = re.fullmatch(r'\?\(@(\.[^=!]+)\s*==\s*"([^"]*)"\)', inner)
                if not m:
                    fail("sim: unsupported filter " + inner, 2)
                path, want = m.group(1), m.group(2)
                for v in vals:
                    for item in v if isinstance(v, list) else []:
                        got = eval_path(path, item, root)
                        if got and str(got[0]) == want:
                            nxt.append(item)
            else:
                fail("sim: unsupported subscript " + inner, 2)
            vals = nxt
        else:
            fail("sim: cannot parse JSONPath " + expr, 2)
    return vals


def show(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        # kubectl prints a map or a list as compact JSON, keys sorted (Go's encoding/json).
        return json.dumps(v, separators=(",", ":"), sort_keys=True)
    return str(v)


def render(tree, cur, root):
    out = ""
    for node in tree:
        if node[0] == "text":
            out += node[1]
        elif node[0] == "range":
            for item in eval_path(node[1], cur, root):
                out += render(node[2], item, root)
        else:
            val = node[1]
            if val.startswith('"') and val.endswith('"'):
                out += val[1:-1].encode().decode("unicode_escape")
            else:
                out += " ".join(show(v) for v in eval_path(val, cur, root))
    return out


def output(obj, fmt):
    if fmt.startswith("jsonpath="):
        sys.stdout.write(render(parse_template(fmt[len("jsonpath=") :]), obj, obj))
    elif fmt == "json":
        sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    elif fmt == "name":
        for item in obj.get("items", [obj]):
            sys.stdout.write(item["metadata"]["name"] + "\n")
    else:
        fail("sim: unsupported output " + fmt, 2)


# ---------------------------------------------------------------- kubectl


def parse_args(argv):
    """kubectl flags as a dict, positionals as a list."""
    flags, pos = {}, []
    takes_value = {"-n", "--namespace", "-l", "--selector", "--field-selector", "-o", "--output", "--for", "--timeout", "--context", "--kubeconfig", "-f", "--filename"}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            pos.append(("--", argv[i + 1 :]))
            break
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            flags[k] = v
        elif a in takes_value:
            flags[a] = argv[i + 1]
            i += 1
        elif a.startswith("-") and a != "-":
            flags[a] = True
        else:
            pos.append(a)
        i += 1
    return flags, pos


def selector_matches(sel, labels):
    if not sel:
        return True
    m = re.fullmatch(r"\s*(\S+)\s+in\s+\(([^)]*)\)\s*", sel)
    if m:
        return labels.get(m.group(1)) in [x.strip() for x in m.group(2).split(",")]
    for term in sel.split(","):
        k, _, v = term.partition("=")
        if labels.get(k.strip()) != v.strip():
            return False
    return True


def pods_matching(st, flags, all_ns):
    ns = flags.get("-n") or flags.get("--namespace") or "default"
    sel = flags.get("-l") or flags.get("--selector")
    field = flags.get("--field-selector", "")
    node = field[len("spec.nodeName=") :] if field.startswith("spec.nodeName=") else None
    out = []
    for p in st["pods"]:
        if not all_ns and p["ns"] != ns:
            continue
        if not selector_matches(sel, p["labels"]):
            continue
        if node is not None and p.get("node") != node:
            continue
        out.append(p)
    return out


def kubectl(argv):
    st = load()
    tick(st)
    flags, pos = parse_args(argv)
    # The runbook pins every call to its context: a call without one is a bug of the script.
    ctx = flags.get("--context")
    if ctx is None:
        fail("sim: kubectl called without --context: %r" % argv, 2)
    if ctx != st.get("context", "ack-prod"):
        if ctx not in st.get("other_contexts", {}):
            fail('error: context "%s" does not exist' % ctx)
        # Another cluster behind that context: its own namespace UID, none of these nodes.
        other = st["other_contexts"][ctx]
        if pos[:3] == ["get", "namespace", "kube-system"] or pos[:3] == ["get", "ns", "kube-system"]:
            output({"metadata": {"name": "kube-system", "uid": other["uid"]}}, flags.get("-o", ""))
            save(st)
            return
        fail("sim: the other cluster %s has nothing else modelled: %r" % (ctx, argv), 2)
    fmt = flags.get("-o") or flags.get("--output") or ""
    all_ns = "-A" in flags or "--all-namespaces" in flags
    verb = pos[0] if pos else ""
    try:
        if verb == "get":
            kind = pos[1]
            name = pos[2] if len(pos) > 2 else None
            if kind in ("node", "nodes", "no"):
                if name:
                    if name not in st["nodes"]:
                        fail('Error from server (NotFound): nodes "%s" not found' % name)
                    output(node_obj(st, name), fmt)
                else:
                    output({"items": [node_obj(st, n) for n in st["nodes"]]}, fmt)
            elif kind in ("ds", "daemonset", "daemonsets") and name is None:
                items = [ds_obj(st, n) for n in st["daemonsets"]]
                if st.get("kured_lock"):
                    items.append({"metadata": {"name": "kured", "namespace": "kube-system", "annotations": {
                        "weave.works/kured-node-lock": json.dumps({"nodeID": st["kured_lock"]})}}})
                output({"items": items}, fmt)
            elif kind in ("lease", "leases"):
                lease = st.get("leases", {}).get(name)
                if lease is None:
                    fail('Error from server (NotFound): leases.coordination.k8s.io "%s" not found' % name)
                output(lease, fmt)
            elif kind in ("ds", "daemonset", "daemonsets"):
                if name not in st["daemonsets"] and "--ignore-not-found" in flags:
                    pass
                elif name not in st["daemonsets"]:
                    fail('Error from server (NotFound): daemonsets.apps "%s" not found' % name)
                else:
                    output(ds_obj(st, name), fmt)
            elif kind in ("pod", "pods", "po"):
                if name:
                    found = [p for p in st["pods"] if p["name"] == name]
                    if not found:
                        fail('Error from server (NotFound): pods "%s" not found' % name)
                    output(pod_obj(found[0]), fmt)
                else:
                    output({"items": [pod_obj(p) for p in pods_matching(st, flags, all_ns)]}, fmt)
            elif kind in ("ns", "namespace", "namespaces"):
                if name != "kube-system":
                    fail('Error from server (NotFound): namespaces "%s" not found' % name)
                output({"metadata": {"name": name, "uid": st.get("cluster_uid", "uid-kube-system-prod")}}, fmt)
            elif kind in ("pdb", "poddisruptionbudget", "poddisruptionbudgets"):
                output({"items": [pdb_obj(b) for b in st.get("pdbs", [])]}, fmt)
            else:
                fail("sim: cannot get " + kind, 2)
        elif verb in ("cordon", "uncordon"):
            n = st["nodes"][pos[1]]
            n["unschedulable"] = verb == "cordon"
            print("node/%s %sed" % (pos[1], verb))
        elif verb == "annotate":
            n = st["nodes"][pos[2]]
            ann = n.setdefault("annotations", {})
            for kv in pos[3:]:
                if kv.endswith("-") and "=" not in kv:
                    ann.pop(kv[:-1], None)
                else:
                    k, v = kv.split("=", 1)
                    if k in ann and "--overwrite" not in flags:
                        fail("error: --overwrite is false but found the following declared annotation(s): '%s' already has a value" % k)
                    ann[k] = v
            print("node/%s annotated" % pos[2])
        elif verb == "drain":
            drain(st, pos[1], flags)
        elif verb in ("create", "replace"):
            lease_write(st, verb, json.load(sys.stdin), fmt)
        elif verb == "delete" and pos[1] in ("lease", "leases"):
            if st.get("leases", {}).pop(pos[2], None) is None:
                fail('Error from server (NotFound): leases.coordination.k8s.io "%s" not found' % pos[2])
            st.setdefault("history", []).append("lease-delete %s" % pos[2])
            print('lease.coordination.k8s.io "%s" deleted' % pos[2])
        elif verb == "delete":
            if pos[1] not in ("pod", "pods", "po"):
                fail("sim: cannot delete " + pos[1], 2)
            found = [p for p in st["pods"] if p["name"] == pos[2]]
            if not found:
                fail('Error from server (NotFound): pods "%s" not found' % pos[2])
            p = found[0]
            st["pods"].remove(p)
            st.setdefault("history", []).append("delete-pod %s %s" % (p["node"], p["name"]))
            if p.get("owner") == "DaemonSet":
                new_pod_from(st, p["labels"]["name"], p["node"])
            print('pod "%s" deleted' % p["name"])
        elif verb == "exec":
            save(st)
            kexec(st, pos, flags)
            return
        elif verb == "wait":
            kwait(st, pos, flags)
        elif verb == "rollout":
            ds = st["daemonsets"][pos[2].split("/", 1)[1]]
            if ds["strategy"] != "RollingUpdate":
                fail("error: rollout status is only available for RollingUpdate strategy type")
            print('daemon set "%s" successfully rolled out' % pos[2].split("/", 1)[1])
        else:
            fail("sim: unsupported kubectl verb " + " ".join(argv), 2)
    finally:
        save(st)


def lease_write(st, verb, obj, fmt):
    """A Lease created (AlreadyExists when the name is taken) or replaced (Conflict when its
    resourceVersion is not the stored one), as the API server answers."""
    if obj.get("kind") != "Lease":
        fail("sim: can only %s a Lease" % verb, 2)
    leases = st.setdefault("leases", {})
    name = obj["metadata"]["name"]
    res = 'leases.coordination.k8s.io "%s"' % name
    if verb == "create":
        if name in leases:
            fail("Error from server (AlreadyExists): error when creating \"STDIN\": %s already exists" % res)
    else:
        if name not in leases:
            fail("Error from server (NotFound): error when replacing \"STDIN\": %s not found" % res)
        rv = obj["metadata"].get("resourceVersion")
        if rv and rv != leases[name]["metadata"]["resourceVersion"]:
            fail("Error from server (Conflict): error when replacing \"STDIN\": Operation cannot be fulfilled on %s: the object has been modified; please apply your changes to the latest version and try again" % res)
    st["rv"] = st.get("rv", 100) + 1
    obj["metadata"]["resourceVersion"] = str(st["rv"])
    leases[name] = obj
    st.setdefault("history", []).append("lease-%s %s %s" % (verb, name, obj["spec"].get("holderIdentity")))
    output(obj, fmt)


def drain(st, node, flags):
    n = st["nodes"][node]
    n["unschedulable"] = True
    print("node/%s cordoned" % node)
    for b in st.get("pdbs", []):
        if b["disruptionsAllowed"] == 0 and node in b.get("blocks", []):
            pod = next((p for p in st["pods"] if p.get("node") == node and p.get("owner") != "DaemonSet"), None)
            pname = pod["name"] if pod else "app"
            sys.stderr.write(
                'error when evicting pods/"%s" -n "%s" (will retry after 5s): Cannot evict pod as it would violate the pod\'s disruption budget.\n'
                % (pname, b["ns"])
            )
            st.setdefault("history", []).append("drain-blocked %s" % node)
            save(st)
            fail(
                'error: unable to drain node "%s" due to error: [error when waiting for pod "%s" in namespace "%s" to terminate: global timeout reached: %s], continuing command...'
                % (node, pname, b["ns"], flags.get("--timeout", "0s"))
            )
    for p in st["pods"]:
        if p.get("node") == node and p.get("owner") != "DaemonSet":
            print('evicting pod %s/%s' % (p["ns"], p["name"]))
            p["node"] = ""
            p["phase"] = "Pending"
    st.setdefault("history", []).append("drain %s" % node)
    print("node/%s drained" % node)


def kexec(st, pos, flags):
    pod_name = pos[1]
    rest = next((x[1] for x in pos if isinstance(x, tuple)), [])
    found = [p for p in st["pods"] if p["name"] == pod_name]
    if not found:
        fail('Error from server (NotFound): pods "%s" not found' % pod_name)
    p = found[0]
    n = st["nodes"][p["node"]]
    if n.get("exec_failures", 0) > 0:
        n["exec_failures"] -= 1
        save(st)
        fail("error: unable to upgrade connection: container not found (\"%s\")" % p.get("container"))
    if n["ready"] != "True" or not p.get("ready", True):
        fail("error: unable to upgrade connection: pod %s is not running" % pod_name)
    nsenter = ["nsenter", "-t", "1", "-i", "-p", "-n", "-u", "-m", "--"]
    if rest[: len(nsenter)] != nsenter:
        fail("sim: only `nsenter -t 1 -i -p -n -u -m -- CMD` is modelled, got %r" % rest, 2)
    cmd = rest[len(nsenter) :]
    import shutil
    import subprocess
    import tempfile

    root = tempfile.mkdtemp(prefix="sim-proc-")
    try:
        km = os.path.join(root, "cgpu_km")
        mod = n.get("module", {})
        if mod.get("loaded"):
            os.makedirs(km)
            with open(os.path.join(km, "version"), "w") as f:
                f.write(mod["version"] + "\n")
            for i, pol in enumerate(mod["policies"]):
                os.makedirs(os.path.join(km, str(i)))
                with open(os.path.join(km, str(i), "policy"), "w") as f:
                    f.write("%s\n" % pol)
        cmd = [a.replace("/proc/cgpu_km", km) for a in cmd]
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(r.stdout.replace(km, "/proc/cgpu_km"))
        sys.stderr.write(r.stderr.replace(km, "/proc/cgpu_km"))
        sys.exit(r.returncode)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def kwait(st, pos, flags):
    cond = flags.get("--for", "")
    if not cond.startswith("condition=Ready"):
        fail("sim: unsupported wait " + cond, 2)
    want = "True"
    if cond.startswith("condition=Ready="):
        want = cond.split("=", 2)[2].capitalize()
    target = pos[1] if len(pos) > 1 else ""

    def status():
        if target.startswith("node/"):
            return [st["nodes"][target[5:]]["ready"]]
        if target in ("pod", "pods"):
            pods = pods_matching(st, flags, False)
            if not pods:
                fail("error: no matching resources found")
            return ["True" if p.get("ready", True) and st["nodes"][p["node"]]["ready"] == "True" else "False" for p in pods]
        fail("sim: unsupported wait target " + target, 2)

    for _ in range(30):
        if all(s == want for s in status()):
            print("%s condition met" % target)
            return
        tick(st)
    fail("error: timed out waiting for the condition on %s" % target)


# ---------------------------------------------------------------- aliyun


def aliyun(argv):
    st = load()
    if argv[:2] != ["ecs", "RebootInstance"]:
        fail("sim: unsupported aliyun call " + " ".join(argv), 2)
    args = dict(zip(argv[2::2], argv[3::2]))
    inst = args.get("--InstanceId")
    node = next((k for k, n in st["nodes"].items() if n.get("instance") == inst), None)
    if st.get("ecs_forbidden"):
        fail("ERROR: SDK.ServerError\nErrorCode: Forbidden.RAM\nMessage: User not authorized to operate on the specified resource.")
    if node is None:
        fail("ERROR: SDK.ServerError\nErrorCode: InvalidInstanceId.NotFound\nMessage: The specified InstanceId does not exist.")
    if args.get("--DryRun") == "true":
        fail("ERROR: SDK.ServerError\nErrorCode: DryRunOperation\nMessage: Request validation has been passed with DryRun flag set.")
    n = st["nodes"][node]
    st.setdefault("history", []).append("reboot %s" % node)
    if n.get("reboot_failures", 0) > 0:
        n["reboot_failures"] -= 1
    else:
        n["rebooting"] = st.get("tick", 0)
    save(st)
    print('{"RequestId": "sim-%d"}' % st.get("tick", 0))


def main():
    tool = os.path.basename(sys.argv[1])
    argv = sys.argv[2:]
    # The script runs a batch's waits side by side, so several stub calls overlap: each call
    # loads, changes and saves the whole state, and does so alone (as the API server serialises
    # writes), or two calls lose each other's change or race on the temporary file.
    import fcntl

    lock = open(STATE + ".lock", "a")
    fcntl.flock(lock, fcntl.LOCK_EX)
    log([tool] + argv)
    if tool == "kubectl":
        kubectl(argv)
    elif tool == "aliyun":
        aliyun(argv)
    else:
        fail("sim: unknown tool " + tool, 2)


if __name__ == "__main__":
    main()
