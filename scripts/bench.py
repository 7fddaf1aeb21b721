"""Benchmark driver for scripts/bench: generates the workloads, runs each command several times
in a fresh process, and prints median wall time, CPU time and peak RSS side by side with the
ratio to each peer. Standard library only.

One function per workload (`SECTIONS`, run in that order; `scripts/bench NAME…` runs some).
With BEFORE=REV (scripts/bench builds REV's release binary into target/bench/before/) or
BEFORE_BIN=PATH, each cgpu-lint row is followed by the same command with that binary."""

import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "target" / "bench"
TOOLS = ROOT / "target" / "tools"
VENV = ROOT / "target" / "venv" / "bin"
CGPU = ROOT / "target" / "release" / "cgpu-lint"
RUNS = int(os.environ.get("RUNS", "5"))
BEFORE = Path(os.environ["BEFORE_BIN"]) if os.environ.get("BEFORE_BIN") else None
HELM_HOME = BENCH / "helm-home"

POLICIES = [0, 1, 2, 3, 4, 5]
TAGS = ["v1.5.20-3c9d1e7-aliyun", "v1.5.10-2b9e7d4-aliyun", "v1.5.3-8d3fc1b-aliyun", "v1.5.16-1f0e3a2-aliyun"]


def values_file(i: int, rng: random.Random) -> str:
    policy = rng.choice(POLICIES)
    tag = rng.choice(TAGS)
    pool = f"np{rng.randrange(16**10):010x}"
    return f"""# ack-ai-installer values for cluster c{i:05d} ({rng.choice(['cn-hangzhou', 'cn-beijing', 'ap-southeast-1'])})
gpushare:
  enabled: true
  image: acs/k8s-gpushare-plugin
  tag: v2-1.11-aff8a23
  imagePullPolicy: IfNotPresent

cgpu:
  enabled: true
  image: acs/cgpu-installer
  tag: {tag}
  financeCloudImageTag: v1.0.9-fin
  imagePullPolicy: IfNotPresent
  # 0 fair share, 1 preemptive, 2 weight-based, 3 fixed, 4 soft, 5 native
  policy: {policy}
  nodeSelector:
    ack.node.gpu.schedule: cgpu
    alibabacloud.com/nodepool-id: {pool}
  checkRegions: true
"""


def fleet(n: int) -> Path:
    d = BENCH / f"fleet{n}"
    marker = d / ".complete"
    if marker.exists():
        return d
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    rng = random.Random(n)
    for i in range(n):
        (d / f"values-c{i:05d}.yaml").write_text(values_file(i, rng))
    marker.write_text("")
    return d


CONFIGMAP = """---
# Source: big-chart/templates/configmap-{i}.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-{i}
  namespace: default
  labels:
    app.kubernetes.io/managed-by: Helm
data:
  payload: "{payload}"
"""

INSTALLER = """---
# Source: ack-ai-installer/templates/cgpu/daemonset.yaml
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: cgpu-installer
  namespace: kube-system
spec:
  selector:
    matchLabels:
      name: cgpu-installer
  template:
    metadata:
      labels:
        name: cgpu-installer
    spec:
      hostPID: true
      priorityClassName: system-node-critical
      nodeSelector:
        ack.node.gpu.schedule: cgpu
      containers:
      - name: cgpu-installer
        image: "registry-vpc.cn-hangzhou.aliyuncs.com/acs/cgpu-installer:v1.5.20-3c9d1e7-aliyun"
        imagePullPolicy: IfNotPresent
        securityContext:
          privileged: true
        env:
        - name: POLICY
          value: "2"
"""


def stream(helm4: bool) -> Path:
    name = "stream-helm4.yaml" if helm4 else "stream-helm3.yaml"
    p = BENCH / name
    if p.exists():
        return p
    BENCH.mkdir(parents=True, exist_ok=True)
    target = 64 * 1024 * 1024
    docs = 30_000
    per_doc = target // docs
    payload = "x" * max(16, per_doc - 220)
    parts = []
    for i in range(docs):
        doc = CONFIGMAP.format(i=i, payload=payload)
        if helm4:
            doc = doc.replace("# Source: big-chart/templates/configmap-%d.yaml\n" % i, "").replace(
                "  labels:\n",
                "  annotations:\n    postrenderer.helm.sh/postrender-filename: 'big-chart/templates/configmap-%d.yaml'\n  labels:\n" % i,
            )
        parts.append(doc)
        if i == docs // 2:
            parts.append(INSTALLER)
    text = "".join(parts)
    if helm4:
        text = text.lstrip("-\n")
    p.write_text(text)
    return p


def measure(cmd, stdin=None, stdout=None):
    """One run: (wall seconds, cpu seconds, peak RSS KiB, exit status). GNU time reports the
    child's own peak RSS (a fork of this Python process would report Python's)."""
    fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
    fout = open(stdout, "wb") if stdout else subprocess.DEVNULL
    stats = BENCH / ".time"
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", str(stats), *cmd],
                          stdin=fin, stdout=fout, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    for f in (fin, fout):
        if f is not subprocess.DEVNULL:
            f.close()
    user, system, rss = stats.read_text().split()[-3:]
    return wall, float(user) + float(system), int(rss), proc.returncode


def bench(label, cmd, stdin=None, stdout=None, runs=None, warm=True):
    walls, cpus, rss, codes = [], [], [], set()
    if warm:
        measure(cmd, stdin, stdout)  # warm the page cache
    for _ in range(runs or RUNS):
        w, c, r, code = measure(cmd, stdin, stdout)
        walls.append(w)
        cpus.append(c)
        rss.append(r)
        codes.add(code)
    return {
        "label": label,
        "wall": statistics.median(walls),
        "cpu": statistics.median(cpus),
        "rss": max(rss),
        "codes": sorted(codes),
    }


def ours(label, args, **kw):
    """The cgpu-lint row, then (BEFORE) the same command with the before binary."""
    rows = [bench(label, [str(CGPU), *args], **kw)]
    if BEFORE:
        rows.append(bench(f"{label} (before)", [str(BEFORE), *args], **kw))
    return rows


def fmt_time(s):
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def table(title, rows, size_bytes=None):
    base = rows[0]
    print(f"\n### {title}\n")
    print("| command | median wall | CPU | peak RSS | exit | peer ÷ cgpu-lint (wall) |" + (" throughput |" if size_bytes else ""))
    print("|---|---|---|---|---|---|" + ("---|" if size_bytes else ""))
    for r in rows:
        ratio = r["wall"] / base["wall"] if base["wall"] else float("nan")
        line = (f"| {r['label']} | {fmt_time(r['wall'])} | {fmt_time(r['cpu'])} | {r['rss'] / 1024:.1f} MiB "
                f"| {','.join(map(str, r['codes']))} | {'—' if r is base else f'{ratio:.1f}×'} |")
        if size_bytes:
            line += f" {size_bytes / r['wall'] / 1e6:.0f} MB/s |"
        print(line)


# `cgpu-lint check` on the 50 MB values file (big_values(), below) before issue 20's lean parse:
# peak RSS and wall time measured 2026-12-02 on bb4d57a, release build without LTO (same code,
# CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16), one run on the shared
# 2-core machine at load average ~15. The run prints its own figure beside this one.
BIG_VALUES_BEFORE = {"date": "2026-12-02", "rss_kib": 1_251_268, "wall": 46.57}


def big_values() -> Path:
    """The 50 MB case: a values file of 2,100,000 lines (52,047,840 bytes)."""
    p = BENCH / "values-50mb.yaml"
    if not p.exists():
        BENCH.mkdir(parents=True, exist_ok=True)
        p.write_text(big_values_file(2_100_000))
    return p


def big_values_file(lines: int) -> str:
    """A values file of `lines` lines: the cgpu block near the top, then the other blocks a large
    ack-ai-installer values file carries (here: many node pools' settings)."""
    head = values_file(0, random.Random(0))
    out = [head]
    n = head.count("\n")
    i = 0
    while n < lines:
        block = f"""pool{i:04d}:
  enabled: true
  labels:
    ack.node.gpu.schedule: cgpu
    alibabacloud.com/nodepool-id: np{i:010x}
  # a comment line
  resources: {{cpu: "{i % 8 + 1}", memory: {i % 64 + 1}Gi}}
"""
        out.append(block)
        n += block.count("\n")
        i += 1
    return "\n".join("".join(out).split("\n")[:lines]) + "\n"


class Lsp:
    """A minimal LSP client over the server's stdio."""

    def __init__(self, options):
        import json
        self.json = json
        self.p = subprocess.Popen([str(CGPU), "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.next_id = 1
        self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                    "initializationOptions": options})
        self.notify("initialized", {})

    def send(self, msg):
        body = self.json.dumps(msg).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()

    def read(self):
        length = None
        while True:
            line = self.p.stdout.readline()
            if not line:
                sys.exit("bench: the server closed its output")
            line = line.strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return self.json.loads(self.p.stdout.read(length))

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        while True:
            m = self.read()
            if m.get("id") == i and "method" not in m:
                return m

    def diagnostics(self, uri, version):
        while True:
            m = self.read()
            if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri \
                    and m["params"].get("version") == version:
                return m["params"]["diagnostics"]

    def close(self):
        self.request("shutdown", None)
        self.notify("exit", None)
        self.p.wait(timeout=30)


def server_latency(edits: int):
    """Time from sending a didChange to receiving the publishDiagnostics of that version, on a
    1,000-line values file, one edit at a time (each waits for its diagnostics): the server's
    debounce (the default, and 0 for the bare lint + protocol cost) plus linting plus framing."""
    text = big_values_file(1000)
    assert text.count("\n") == 1000
    line = next(i for i, l in enumerate(text.split("\n")) if l.startswith("  policy: "))
    uri = "file:///bench/values-1000-lines.yaml"
    print(f"\n### Language server: didChange → publishDiagnostics, 1,000-line values file, {edits} edits\n")
    print("| debounce | median | p90 | min | max | findings after the edit |")
    print("|---|---|---|---|---|---|")
    for debounce in (None, 0):
        lsp = Lsp({} if debounce is None else {"debounceMs": debounce})
        lsp.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}})
        lsp.diagnostics(uri, 1)
        times, counts = [], set()
        for v in range(2, edits + 2):
            # Alternate the policy between a clean value and a quoted one (policy-quoted).
            new = '"1"' if v % 2 else "1"
            old_len = 1 if v % 2 else 3
            start = time.perf_counter()
            lsp.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": v},
                "contentChanges": [{"range": {"start": {"line": line, "character": 10},
                                              "end": {"line": line, "character": 10 + old_len}},
                                    "text": new}],
            })
            d = lsp.diagnostics(uri, v)
            times.append(time.perf_counter() - start)
            counts.add(len(d))
        lsp.close()
        times.sort()
        p90 = times[int(len(times) * 0.9) - 1]
        label = "default (100 ms)" if debounce is None else f"{debounce} ms"
        print(f"| {label} | {fmt_time(statistics.median(times))} | {fmt_time(p90)} | {fmt_time(times[0])} "
              f"| {fmt_time(times[-1])} | {sorted(counts)} |")


def schema_file() -> Path:
    BENCH.mkdir(parents=True, exist_ok=True)
    schema = BENCH / "values.schema.json"
    schema.write_bytes(subprocess.run([str(CGPU), "schema"], check=True, capture_output=True).stdout)
    return schema


def one_file():
    one = ROOT / "tests" / "fixtures" / "values-valid-full-default.yaml"
    schema = schema_file()
    table("One values file", [
        *ours("cgpu-lint check", ["check", str(one)]),
        bench("check-jsonschema (same schema)", [str(VENV / "check-jsonschema"), "--schemafile", str(schema), str(one)]),
        bench("yamllint (parse-only floor)", [str(VENV / "yamllint"), "-d", "relaxed", str(one)]),
        bench("helm lint (chart fixture)", [str(TOOLS / "helm3"), "lint", str(ROOT / "charts-fixtures" / "ack-ai-installer"), "-f", str(one)]),
    ])


def startup():
    """A whole process on one small file against `/bin/true`: PAIRS alternating pairs, median
    wall time of each (subprocess start to exit, no /usr/bin/time in between)."""
    pairs = int(os.environ.get("PAIRS", "101"))
    files = [ROOT / "examples" / "values.yaml", ROOT / "tests" / "fixtures" / "values-valid-full-default.yaml"]
    cmds = [("/bin/true", ["/bin/true"])]
    for f in files:
        rel = f.relative_to(ROOT)
        cmds.append((f"cgpu-lint check {rel}", [str(CGPU), "check", str(f)]))
        if BEFORE:
            cmds.append((f"cgpu-lint check {rel} (before)", [str(BEFORE), "check", str(f)]))
    times = {label: [] for label, _ in cmds}
    for _ in range(3):
        for _, cmd in cmds:
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(pairs):
        for label, cmd in cmds:
            start = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[label].append(time.perf_counter() - start)
    base = statistics.median(times["/bin/true"])
    print(f"\n### Start-up: one small file against /bin/true ({pairs} rounds, median wall; load {os.getloadavg()[0]:.1f})\n")
    print("| command | median wall | min | ÷ /bin/true (median) |")
    print("|---|---|---|---|")
    for label, _ in cmds:
        m = statistics.median(times[label])
        print(f"| {label} | {m * 1000:.2f} ms | {min(times[label]) * 1000:.2f} ms | {m / base:.2f}× |")


def fleets():
    schema = schema_file()
    f1000 = fleet(1000)
    files = sorted(str(p) for p in f1000.glob("*.yaml"))
    table("1,000 values files, one call", [
        *ours("cgpu-lint check DIR", ["check", "--quiet", str(f1000)]),
        bench("check-jsonschema (same schema)", [str(VENV / "check-jsonschema"), "--schemafile", str(schema), *files]),
        bench("yamllint DIR (parse-only floor)", [str(VENV / "yamllint"), "-d", "relaxed", str(f1000)]),
    ])

    f10000 = fleet(10000)
    table("10,000 values files, one call (memory must not grow with the file count beyond the report)", [
        bench("cgpu-lint check DIR (10,000)", [str(CGPU), "check", "--quiet", str(f10000)]),
        bench("cgpu-lint check DIR (1,000)", [str(CGPU), "check", "--quiet", str(f1000)]),
    ])


def big():
    big = big_values()
    size = big.stat().st_size
    r = bench("cgpu-lint check (50 MB values file)", [str(CGPU), "check", "--quiet", str(big)])
    table(f"One {size / 1e6:.0f} MB values file ({size:,} bytes)", [r], size)
    b = BIG_VALUES_BEFORE
    print(f"\npeak RSS: {r['rss'] / 1024:.1f} MiB now ({r['rss'] * 1024 / size:.1f}× the file; target ≤ 3×), "
          f"{b['rss_kib'] / 1024:.1f} MiB on {b['date']} before the lean parse ({b['rss_kib'] * 1024 / size:.1f}×); "
          f"median wall {fmt_time(r['wall'])} now, {fmt_time(b['wall'])} then")


def keys_file(n: int, top: bool) -> Path:
    """One mapping of `n` small flow mappings (issue 38's shape): under `extra:`, or at the top."""
    p = BENCH / f"keys{n}{'-top' if top else ''}.yaml"
    if not p.exists():
        BENCH.mkdir(parents=True, exist_ok=True)
        indent = "" if top else "  "
        with open(p, "w") as f:
            if not top:
                f.write("extra:\n")
            for i in range(n):
                f.write(f'{indent}k{i}: {{name: n{i}, value: "v{i}", list: [a, b, {i}]}}\n')
    return p


def helm_template(values: Path):
    home = HELM_HOME
    for d in ("data/plugins", "config", "cache"):
        (home / d).mkdir(parents=True, exist_ok=True)
    env = [f"HELM_DATA_HOME={home / 'data'}", f"HELM_PLUGINS={home / 'data/plugins'}",
           f"HELM_CONFIG_HOME={home / 'config'}", f"HELM_CACHE_HOME={home / 'cache'}"]
    return ["env", *env, str(TOOLS / "helm3"), "template", "r", str(ROOT / "charts-fixtures" / "ack-ai-installer"),
            "-f", str(values)]


def values_shapes():
    """`values` and `check --stack` on one mapping of 20,000 / 40,000 / 500,000 keys, beside
    `helm template -f` on the same file (time and peak RSS). The before binary is run on the
    20,000- and 40,000-key files only (it took more than an hour on 500,000)."""
    sizes = [int(x) for x in os.environ.get("KEYS", "20000,40000,500000").split(",")]
    for n in sizes:
        for top in (False, True):
            f = keys_file(n, top)
            heavy = n > 100_000
            kw = {"runs": 1, "warm": False} if heavy else {"runs": min(RUNS, 3)}
            rows = []
            for label, args in (("cgpu-lint values --helm 3", ["values", "--helm", "3", str(f)]),
                                ("cgpu-lint check --stack", ["check", "--stack", "--quiet", str(f)])):
                rows.append(bench(label, [str(CGPU), *args], **kw))
                if BEFORE and not heavy:
                    rows.append(bench(f"{label} (before)", [str(BEFORE), *args], **kw))
            rows.append(bench("helm template -f (Helm 3)", helm_template(f), **kw))
            where = "at the top" if top else "under one key"
            table(f"{n:,} keys {where} ({f.stat().st_size / 1e6:.1f} MB)", rows)


def post_render():
    for helm4 in (False, True):
        s = stream(helm4)
        out = BENCH / "post-render.out"
        size = s.stat().st_size
        rows = [
            *ours("cgpu-lint post-render", ["post-render", "--fail-on", "never"], stdin=s, stdout=out),
            bench("cat", ["cat"], stdin=s, stdout=out),
        ]
        table(f"post-render, {size / 2**20:.0f} MiB Helm {'4' if helm4 else '3'} stream, 30,000 documents, one cgpu-installer", rows, size)
        print(f"\ncgpu-lint ÷ cat throughput: {rows[-1]['wall'] / rows[0]['wall']:.2f} (goal ≥ 0.8)")
        measure([str(CGPU), "post-render", "--fail-on", "never"], stdin=s, stdout=out)
        same = out.read_bytes() == s.read_bytes()
        print(f"\noutput byte-identical to input: {'yes' if same else 'NO'}")
    # As Helm runs a post-renderer: the stream on a pipe in, the output on a pipe out (a cat on
    # each side, beside the same pipeline with cat in the middle). A stream over the spill's
    # 4 MiB is held in a temporary file until its verdict; the 3 MiB head stays in memory.
    s = stream(False)
    small = BENCH / "stream-3mib.yaml"
    if not small.exists():
        data = s.read_bytes()
        small.write_bytes(data[: data.find(b"\n---\n", 3 << 20) + 1])
    for f in (s, small):
        size = f.stat().st_size
        rows = [
            bench("piped: cgpu-lint post-render", ["sh", "-c", f"cat {f} | {CGPU} post-render --fail-on never 2>/dev/null | cat"],
                  stdout=out),
            bench("piped: cat", ["sh", "-c", f"cat {f} | cat | cat"], stdout=out),
        ]
        table(f"post-render through pipes (as Helm runs it), {size / 2**20:.0f} MiB Helm 3 stream", rows, size)
        print(f"\ncgpu-lint ÷ cat throughput through pipes: {rows[-1]['wall'] / rows[0]['wall']:.2f}")


def server():
    server_latency(int(os.environ.get("EDITS", "200")))
    memory()


# --- Memory on node-dense values files (issue 38, item 2) -------------------------------------
# `scripts/bench memory` runs only this part. MEM_RUNS (default 1) runs of each command on the
# 50 MB files, RUNS on the small one; MEM_TIMEOUT (default 900 s) caps each run (a capped run
# prints its exit status 124). MEM_FILES (file stems, comma-separated) runs only those files;
# MEM_SKIP skips the rows whose label starts with one of its comma-separated prefixes.

def dense_line(i: int, indent: str = "") -> str:
    return f'{indent}k{i}: {{name: n{i}, value: "v{i}", list: [a, b, {i}]}}\n'


def dense_values(size: int) -> Path:
    """About `size` bytes of small flow mappings, 11 YAML nodes a line (key, mapping, 3 keys,
    2 scalars, a list of 3): a cgpu block, then half the bytes under one root key (`big:`, which
    the lean reading of `check` must hold open), then half as root entries."""
    p = BENCH / f"dense-{size // 1_000_000}mb.yaml"
    if not p.exists():
        BENCH.mkdir(parents=True, exist_ok=True)
        out = ["cgpu:\n  enabled: true\n  policy: 2\n  tag: v1.5.20-3c9d1e7-aliyun\nbig:\n"]
        n, i = len(out[0]), 0
        while n < size // 2:
            out.append(dense_line(i, "  "))
            n += len(out[-1])
            i += 1
        while n < size:
            out.append(dense_line(i))
            n += len(out[-1])
            i += 1
        p.write_text("".join(out))
    return p


def dense_nested_values(size: int) -> Path:
    """The same `size` bytes as dense_values with every line under `big:` (all under one key)."""
    p = BENCH / f"dense-nested-{size // 1_000_000}mb.yaml"
    if not p.exists():
        BENCH.mkdir(parents=True, exist_ok=True)
        out = ["cgpu:\n  enabled: true\n  policy: 2\n  tag: v1.5.20-3c9d1e7-aliyun\nbig:\n"]
        n, i = len(out[0]), 0
        while n < size:
            out.append(dense_line(i, "  "))
            n += len(out[-1])
            i += 1
        p.write_text("".join(out))
    return p


def dense_keys(keys: int) -> Path:
    """The issue's 40,000-key shape: one root mapping `big` of `keys` small flow mappings, no cgpu
    (so `check` reads it whole)."""
    p = BENCH / f"dense-{keys // 1000}k.yaml"
    if not p.exists():
        BENCH.mkdir(parents=True, exist_ok=True)
        p.write_text("big:\n" + "".join(dense_line(i, "  ") for i in range(keys)))
    return p


def long_scalars(size: int) -> Path:
    """About `size` bytes of root entries with one 1,080-character quoted scalar each."""
    p = BENCH / f"long-{size // 1_000_000}mb.yaml"
    if not p.exists():
        BENCH.mkdir(parents=True, exist_ok=True)
        out = ["cgpu:\n  enabled: true\n  policy: 2\n"]
        n, i = len(out[0]), 0
        while n < size:
            out.append(f'key{i}: "' + ("x%07d " % i) * 120 + '"\n')
            n += len(out[-1])
            i += 1
        p.write_text("".join(out))
    return p


def memory():
    runs = int(os.environ.get("MEM_RUNS", "1"))
    cap = os.environ.get("MEM_TIMEOUT", "900")
    chart = ROOT / "charts-fixtures" / "ack-ai-installer"
    files = ((dense_keys(40_000), RUNS), (dense_values(50_000_000), runs),
             (dense_nested_values(50_000_000), runs), (long_scalars(50_000_000), runs))
    only = os.environ.get("MEM_FILES")  # e.g. MEM_FILES=dense-50mb,dense-nested-50mb
    if only:
        files = tuple((f, n) for f, n in files if f.stem in only.split(","))
    # Rows to skip, by the start of their label: MEM_SKIP=helm (Helm's 10-minute run),
    # MEM_SKIP="helm,cgpu-lint check" (only `values`).
    skip = tuple(filter(None, os.environ.get("MEM_SKIP", "").split(",")))
    for f, n in files:
        size = f.stat().st_size
        rows = []
        for label, cmd in (
            ("cgpu-lint check", [str(CGPU), "check", "--quiet", "--no-config", str(f)]),
            ("cgpu-lint values --helm 3", [str(CGPU), "values", "--no-config", "--helm", "3", str(f)]),
            ("cgpu-lint check --stack", [str(CGPU), "check", "--stack", "--quiet", "--no-config", str(f)]),
            ("helm template -f (Helm 3)", [str(TOOLS / "helm3"), "template", "x", str(chart), "-f", str(f)]),
        ):
            if skip and label.startswith(skip):
                continue
            walls, cpus, rss, codes = [], [], [], set()
            for _ in range(n):
                w, c, r, code = measure(["timeout", cap, *cmd])
                walls.append(w)
                cpus.append(c)
                rss.append(r)
                codes.add(code)
            rows.append({"label": label, "wall": statistics.median(walls), "cpu": statistics.median(cpus),
                         "rss": max(rss), "codes": sorted(codes)})
        print(f"\n### Memory: {f.name} ({size:,} bytes), {n} run(s) each, capped at {cap} s\n")
        print("| command | median wall | CPU | peak RSS | × file | exit |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['label']} | {fmt_time(r['wall'])} | {fmt_time(r['cpu'])} | {r['rss'] / 1024:.1f} MiB "
                  f"| {r['rss'] * 1024 / size:.1f}× | {','.join(map(str, r['codes']))} |")


SECTIONS = {
    "one-file": one_file,
    "startup": startup,
    "fleets": fleets,
    "big": big,
    "values": values_shapes,
    "post-render": post_render,
    "server": server,
    "memory": memory,
}


def main():
    names = sys.argv[1:] or list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        sys.exit(f"bench: no section {', '.join(unknown)}; the sections: {', '.join(SECTIONS)}")
    if not CGPU.exists():
        sys.exit(f"bench: {CGPU} is missing (scripts/bench builds it)")
    if names != ["server"]:
        for tool in [VENV / "check-jsonschema", VENV / "yamllint", TOOLS / "helm3"]:
            if not tool.exists():
                sys.exit(f"bench: {tool} is missing (scripts/bench installs it)")
    if BEFORE and not BEFORE.exists():
        sys.exit(f"bench: {BEFORE} is missing")
    BENCH.mkdir(parents=True, exist_ok=True)
    cpu = platform.processor() or platform.machine()
    try:
        model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except Exception:
        model = cpu
    print(f"Machine: {os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}; {RUNS} runs each, median; "
          f"load average {os.getloadavg()[0]:.1f}" + (f"; before = {BEFORE}" if BEFORE else ""))
    for n in names:
        SECTIONS[n]()


if __name__ == "__main__":
    main()
