//! `checklist --format shell`: a script a person reviews, then runs. It decides every node from
//! the node's own state (read through the node's installer pod), detects the reboot by the
//! node's boot id, waits for the node, its installer pod and its policy files, and stops at the
//! first thing it cannot prove, naming the node and the step, with the command that resumes.
//!
//! Every name in it comes from input: names are validated when the checklist is built
//! (DNS-1123 node names, `i-…` instance ids, region ids) and, belt and braces, written through
//! `shlex` as single shell words and used only as quoted variables. Pod names are looked up at
//! run time and checked before use.

use std::fmt::Write;

use super::model::{Checklist, OtherKind, core};
use super::shell::quote;
use super::steps::{
    CORDON_MARK, NSENTER, POD_TIMEOUT, POLICY_TIMEOUT, POLL_INTERVAL, READ_STATE, READY_TIMEOUT,
    REBOOT_TIMEOUT, header_lines, target_text,
};

fn array(name: &str, items: impl IntoIterator<Item = String>) -> String {
    let words: Vec<String> = items.into_iter().map(|s| quote(&s)).collect();
    format!("{name}=({})\n", words.join(" "))
}

/// Text for a `#` comment: a line break in a file name must not end the comment.
fn comment(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

const BODY: &str = r#"
REBOOT_TIMEOUT="${CGPU_CHECKLIST_REBOOT_TIMEOUT:-__REBOOT_TIMEOUT__}"
READY_TIMEOUT="${CGPU_CHECKLIST_READY_TIMEOUT:-__READY_TIMEOUT__}"
POD_TIMEOUT="${CGPU_CHECKLIST_POD_TIMEOUT:-__POD_TIMEOUT__}"
POLICY_TIMEOUT="${CGPU_CHECKLIST_POLICY_TIMEOUT:-__POLICY_TIMEOUT__}"
HEALTH_TIMEOUT="${CGPU_CHECKLIST_HEALTH_TIMEOUT:-__POD_TIMEOUT__}"
POLL="${CGPU_CHECKLIST_POLL:-__POLL__}"
# Planned from files, the cluster's identity is recorded here at the first run and compared
# at every later one.
IDENTITY_FILE="${CGPU_CHECKLIST_IDENTITY_FILE:-$0.cluster-uid}"

usage() { echo "usage: $0 [--yes] [--resume]   (--yes: no prompts; --resume: the same as running it again)" >&2; }
args=()
for arg in "$@"; do
  case "$arg" in
    --yes|-y) assume_yes=1; args+=("$arg") ;;
    --resume) ;;
    *) usage; exit 2 ;;
  esac
done
if [ "${BASH_VERSINFO[0]}" -lt 4 ] || { [ "${BASH_VERSINFO[0]}" -eq 4 ] && [ "${BASH_VERSINFO[1]}" -lt 4 ]; }; then
  echo "error: bash 4.4 or later is needed (this is $BASH_VERSION)" >&2
  exit 2
fi
shopt -s inherit_errexit

# Every kubectl call goes through k: pinned to the plan's context (and kubeconfig).
KCTL=()
if [ -n "$CONTEXT" ]; then KCTL+=(--context "$CONTEXT"); fi
if [ -n "$KUBECONFIG_FILE" ]; then KCTL+=(--kubeconfig "$KUBECONFIG_FILE"); fi
k() { kubectl "${KCTL[@]}" "$@"; }

CURRENT_NODE='-'
CURRENT_STEP='start'
CHANGED=0
ENDED=0
WORK="$(mktemp -d)"
ERRF="$WORK/err"
STEPFILE=''
on_exit() {
  local rc=$?
  rm -rf "$WORK"
  # Ended not done after doing all it may: the run's own last lines name the next step.
  if [ "$rc" -ne 0 ] && [ "$ENDED" != 1 ]; then
    {
      echo
      echo "STOPPED at node $CURRENT_NODE, step $CURRENT_STEP (exit status $rc)."
      if [ "$CHANGED" = 0 ]; then
        echo "Nothing was changed in the cluster."
      else
        echo "Nothing after that step ran. A node this run cordoned keeps its cordon and the annotation $MARK until a later run finishes it."
      fi
      echo "Resume: fix the cause, then run: $0 ${args[*]} --resume"
      echo "(every node is decided again from its own state: nodes at the target are skipped, only the others are drained and restarted)"
    } >&2
  fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM

say() { printf '%s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
step() {
  CURRENT_STEP="$1"
  if [ -n "$STEPFILE" ]; then printf '%s\n' "$1" > "$STEPFILE"; fi
  say "--> $CURRENT_NODE: $1"
}

confirm() {
  if [ "$assume_yes" = 1 ]; then return 0; fi
  local answer=''
  if ! read -r -p "$1 [y/N] " answer; then answer=''; fi
  case "$answer" in [yY]|[yY][eE][sS]) return 0 ;; *) return 1 ;; esac
}

# ---- identity ---------------------------------------------------------------------------------

# The cluster behind the context is the one the plan is for: the kube-system namespace UID.
check_cluster() {
  local uid recorded
  if ! uid="$(k get namespace kube-system -o 'jsonpath={.metadata.uid}' 2>"$ERRF")"; then
    die "context $CONTEXT: cannot read the kube-system namespace (the cluster's identity): $(tr '\n' ' ' < "$ERRF")"
  fi
  [ -n "$uid" ] || die "context $CONTEXT: the kube-system namespace has no UID"
  if [ -n "$CLUSTER_UID" ]; then
    [ "$uid" = "$CLUSTER_UID" ] || die "context $CONTEXT is another cluster: kube-system UID $uid, the plan is for $CLUSTER_UID ($SERVER); nothing was changed"
  elif [ -f "$IDENTITY_FILE" ]; then
    IFS= read -r recorded < "$IDENTITY_FILE" || recorded=''
    [ "$uid" = "$recorded" ] || die "context $CONTEXT is another cluster: kube-system UID $uid, the first run of this plan recorded $recorded in $IDENTITY_FILE; nothing was changed"
  else
    printf '%s\n' "$uid" > "$IDENTITY_FILE" || die "cannot record the cluster identity in $IDENTITY_FILE (set CGPU_CHECKLIST_IDENTITY_FILE)"
    say "cluster identity: kube-system UID $uid (recorded in $IDENTITY_FILE: later runs compare with it)"
  fi
  CLUSTER_UID="$uid"
}

# Reads node i into N_UID N_PROVIDER N_READY N_UNSCHED N_MARK N_BOOT; stops when the node cannot
# be read (deleted) or is not the node the plan was made for (replaced: another UID or instance).
read_node() {
  local i="$1" node="${NODES[$1]}" out
  if ! out="$(k get node "$node" -o "jsonpath={.metadata.uid}|{.spec.providerID}|{.status.conditions[?(@.type==\"Ready\")].status}|{.spec.unschedulable}|{.metadata.annotations.$MARK}|{.status.nodeInfo.bootID}" 2>"$ERRF")"; then
    die "$node: cannot read the node: $(tr '\n' ' ' < "$ERRF")"
  fi
  IFS='|' read -r N_UID N_PROVIDER N_READY N_UNSCHED N_MARK N_BOOT <<< "$out"
  if [ -n "${UIDS[$i]}" ] && [ "$N_UID" != "${UIDS[$i]}" ]; then
    die "$node: node UID is ${N_UID:-missing}, the plan is for ${UIDS[$i]}: the node was replaced since the plan; generate the checklist again"
  fi
  if [ -n "${PROVIDERS[$i]}" ] && [ "$N_PROVIDER" != "${PROVIDERS[$i]}" ]; then
    die "$node: spec.providerID is '${N_PROVIDER}', the plan is for '${PROVIDERS[$i]}': the node was replaced since the plan; generate the checklist again"
  fi
}

# ---- the installer DaemonSet ------------------------------------------------------------------

# The DaemonSet as it is now into DS_POLICY DS_IMAGE DS_STRATEGY DS_SELECTOR.
read_ds() {
  local out labels value
  if ! out="$(k -n kube-system get ds cgpu-installer -o 'jsonpath={.spec.template.spec.containers[?(@.name=="cgpu-installer")].env[?(@.name=="POLICY")].value}|{.spec.template.spec.containers[?(@.name=="cgpu-installer")].image}|{.spec.updateStrategy.type}|{.spec.selector.matchLabels}|{.spec.selector.matchExpressions}' 2>"$ERRF")"; then
    die "cannot read the cgpu-installer DaemonSet: $(tr '\n' ' ' < "$ERRF")"
  fi
  IFS='|' read -r DS_POLICY DS_IMAGE DS_STRATEGY labels value <<< "$out"
  DS_STRATEGY="${DS_STRATEGY:-RollingUpdate}"
  if [ -n "$value" ] && [ "$value" != '[]' ]; then
    die "the cgpu-installer DaemonSet selects its pods with matchExpressions: find its pods by hand"
  fi
  DS_SELECTOR="$(selector_of cgpu-installer "$labels")"
  [ -n "$DS_SELECTOR" ] || die "the cgpu-installer DaemonSet has no .spec.selector.matchLabels"
}

# matchLabels as kubectl prints a map, {"k":"v",...}, as a label selector k=v,... (label keys
# and values hold no , " or :).
selector_of() {
  local ds="$1" labels="$2" pair out=''
  local -a pairs=()
  labels="${labels#\{}"
  labels="${labels%\}}"
  IFS=',' read -r -a pairs <<< "$labels"
  for pair in "${pairs[@]}"; do
    if ! [[ "$pair" =~ ^\"([A-Za-z0-9./_-]+)\":\"([A-Za-z0-9._-]*)\"$ ]]; then
      die "cannot read the $ds DaemonSet's .spec.selector.matchLabels ($2)"
    fi
    out+="${out:+,}${BASH_REMATCH[1]}=${BASH_REMATCH[2]}"
  done
  printf '%s\n' "$out"
}

# Read again before each node: a change by someone else mid-run (a rollback, a second
# helm upgrade) stops the run.
check_ds() {
  local policy="$DS_POLICY" image="$DS_IMAGE" strategy="$DS_STRATEGY" selector="$DS_SELECTOR"
  read_ds
  if [ "$DS_POLICY" != "$policy" ] || [ "$DS_IMAGE" != "$image" ] || [ "$DS_STRATEGY" != "$strategy" ] || [ "$DS_SELECTOR" != "$selector" ]; then
    die "the cgpu-installer DaemonSet changed during the run (POLICY '$policy' -> '$DS_POLICY', image $image -> $DS_IMAGE, updateStrategy $strategy -> $DS_STRATEGY): someone else is changing it; stop, find out who, and generate the checklist again"
  fi
}

# The installer pod on a node (label selector $2) that is not being deleted, into POD, with
# POD_POLICY POD_IMAGE POD_READY; 1 when there is none.
installer_pod() {
  local node="$1" sel="$2" out name deleting policy image ready
  POD=''
  if ! out="$(k -n kube-system get pod -l "$sel" --field-selector "spec.nodeName=$node" -o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.metadata.deletionTimestamp}{"|"}{.spec.containers[0].env[?(@.name=="POLICY")].value}{"|"}{.spec.containers[0].image}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>"$ERRF")"; then
    die "$node: cannot list its installer pods: $(tr '\n' ' ' < "$ERRF")"
  fi
  while IFS='|' read -r name deleting policy image ready; do
    if [ -z "$name" ] || [ -n "$deleting" ]; then continue; fi
    if ! [[ "$name" =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]]; then
      die "unexpected pod name on $node"
    fi
    POD="$name"
    POD_POLICY="$policy"
    POD_IMAGE="$image"
    POD_READY="$ready"
    return 0
  done <<< "$out"
  return 1
}

# The node's cGPU state into STATE (see READ_STATE); 1 with STATE_ERR when it cannot be read.
read_state() {
  local node="$1" sel="$2"
  STATE=''
  STATE_ERR=''
  if ! installer_pod "$node" "$sel"; then
    STATE_ERR="no installer pod found on $node"
    return 1
  fi
  if ! STATE="$(k -n kube-system exec "$POD" -- __NSENTER__ sh -c "$READ_STATE" 2>"$ERRF")"; then
    STATE_ERR="exec in pod $POD failed: $(tr '\n' ' ' < "$ERRF")"
    return 1
  fi
}

# converted | differs | no-module | unreadable, from STATE.
judge() {
  local key value version='' gpus=0 bad=0
  if [ "$STATE" = no-module ]; then echo no-module; return 0; fi
  while read -r key value; do
    case "$key" in
      '') ;;
      version) version="$value" ;;
      /proc/cgpu_km/*/policy)
        gpus=$((gpus + 1))
        if [ "$value" != "$NEW_POLICY" ]; then bad=1; fi ;;
      *) echo unreadable; return 0 ;;
    esac
  done <<< "$STATE"
  if [ -z "$version" ] || [ "$gpus" -eq 0 ]; then echo unreadable; return 0; fi
  if [ -n "$NEW_VERSION" ] && [ "$version" != "$NEW_VERSION" ]; then bad=1; fi
  if [ "$bad" = 0 ]; then echo converted; else echo differs; fi
}

state_text() { tr '\n' ';' <<< "$STATE"; }

# Uncordon node i when this or an earlier run cordoned it (the annotation), whatever plan did.
uncordon_if_ours() {
  local i="$1" node="${NODES[$1]}"
  read_node "$i"
  if [ -n "$N_MARK" ]; then
    CHANGED=1
    k uncordon "$node"
    k annotate node "$node" "$MARK-"
  elif [ "$N_UNSCHED" = true ]; then
    say "$node was cordoned before this run: left cordoned (uncordon it when that reason is resolved)"
  fi
}

# ---- pre-flight -------------------------------------------------------------------------------

preflight() {
  local out i problems desired pods name node ready policy image deleting deadline nodes_ready count version tag
  step tools
  command -v kubectl >/dev/null || die "kubectl is not on PATH"
  for i in "${!NODES[@]}"; do
    if [ -n "${INSTANCES[$i]}" ]; then
      command -v aliyun >/dev/null || die "aliyun (the Alibaba Cloud CLI) is not on PATH"
      break
    fi
  done
  step blocking-findings
  if [ "${#BLOCKED[@]}" -gt 0 ]; then
    printf '  %s\n' "${BLOCKED[@]}" >&2
    die "the plan is unsafe until these findings are fixed; fix them and generate the checklist again"
  fi
  step cluster-identity
  check_cluster
  step installer-policy
  read_ds
  [ "$DS_POLICY" = "$NEW_POLICY" ] || die "cgpu-installer has POLICY '$DS_POLICY', not '$NEW_POLICY': apply the desired values first"
  if [ -n "$NEW_VERSION" ]; then
    step installer-version
    tag="${DS_IMAGE##*:}"
    version="${tag#v}"
    version="${version%%-*}"
    [ "$version" = "$NEW_VERSION" ] || die "cgpu-installer runs image tag '$tag', not cGPU $NEW_VERSION: apply the desired values first"
  fi
  CORE_SELECTOR=''
  if [ "${#VERIFY[@]}" -gt 0 ]; then
    if ! out="$(k -n kube-system get ds cgpu-core-installer --ignore-not-found -o 'jsonpath={.spec.selector.matchLabels}' 2>"$ERRF")"; then
      die "cannot read the cgpu-core-installer DaemonSet: $(tr '\n' ' ' < "$ERRF")"
    fi
    if [ -n "$out" ]; then CORE_SELECTOR="$(selector_of cgpu-core-installer "$out")"; fi
  fi
  step installer-health
  say "installer updateStrategy: $DS_STRATEGY; its pods: -l $DS_SELECTOR"
  deadline=$((SECONDS + HEALTH_TIMEOUT))
  while :; do
    problems=''
    not_ready=''
    count=0
    if ! desired="$(k -n kube-system get ds cgpu-installer -o 'jsonpath={.status.desiredNumberScheduled}' 2>"$ERRF")"; then
      die "cannot read the cgpu-installer DaemonSet: $(tr '\n' ' ' < "$ERRF")"
    fi
    if ! pods="$(k -n kube-system get pod -l "$DS_SELECTOR" -o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.spec.nodeName}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"|"}{.spec.containers[0].env[?(@.name=="POLICY")].value}{"|"}{.spec.containers[0].image}{"|"}{.metadata.deletionTimestamp}{"\n"}{end}' 2>"$ERRF")"; then
      die "cannot list the cgpu-installer pods: $(tr '\n' ' ' < "$ERRF")"
    fi
    if ! nodes_ready="$(k get nodes -o 'jsonpath={range .items[*]}{"|"}{.metadata.name}{"="}{.status.conditions[?(@.type=="Ready")].status}{end}{"|"}' 2>"$ERRF")"; then
      die "cannot list the nodes: $(tr '\n' ' ' < "$ERRF")"
    fi
    while IFS='|' read -r name node ready policy image deleting; do
      if [ -z "$name" ] || [ -n "$deleting" ]; then continue; fi
      count=$((count + 1))
      if [[ "$nodes_ready" != *"|$node=True|"* ]]; then not_ready+=" $node"; continue; fi
      if [ "$ready" != True ]; then problems+=" pod $name on $node is not Ready;"; fi
      if [ "$DS_STRATEGY" = RollingUpdate ] && { [ "$policy" != "$DS_POLICY" ] || [ "$image" != "$DS_IMAGE" ]; }; then
        problems+=" pod $name on $node still runs POLICY '$policy' and $image (rollout not finished);"
      fi
    done <<< "$pods"
    if [ "$count" -lt "${desired:-0}" ]; then problems+=" $count of $desired pods exist;"; fi
    if [ -z "$problems" ]; then break; fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      if [ -n "$not_ready" ] && [ "$DS_STRATEGY" = RollingUpdate ]; then
        problems+=" the installer pods on the NotReady node(s)$not_ready cannot become Ready and hold the rollout (maxUnavailable): bring them back or remove them from the pool;"
      fi
      die "the cgpu-installer DaemonSet is not healthy:$problems do not restart nodes on top of it"
    fi
    sleep "$POLL"
  done
  step pdb
  if ! pods="$(k get pdb -A -o 'jsonpath={range .items[*]}{.metadata.namespace}{"/"}{.metadata.name}{"|"}{.status.disruptionsAllowed}{"\n"}{end}' 2>"$ERRF")"; then
    die "cannot list the PodDisruptionBudgets: $(tr '\n' ' ' < "$ERRF")"
  fi
  while IFS='|' read -r name desired; do
    if [ -n "$name" ] && [ "$desired" = 0 ]; then
      say "warning: PodDisruptionBudget $name allows no disruption now: a drain that needs it stops after $DRAIN_TIMEOUT"
    fi
  done <<< "$pods"
  step ecs-permission
  for i in "${!NODES[@]}"; do
    if [ -n "${INSTANCES[$i]}" ]; then
      ecs_dry_run "${NODES[$i]}" "${INSTANCES[$i]}" "${REGIONS[$i]}"
    fi
  done
  say "note: ACK managed node pools: auto repair acts on a node NotReady past its threshold (180 s for KubeletNotReady) and may drain, restart and uncordon it on its own; switch it off for these node pools during the window."
  say "note: cluster autoscaler: a drained node looks empty and may be removed; pause scale-down during the window (or annotate the nodes cluster-autoscaler.kubernetes.io/scale-down-disabled=true)."
}

# RebootInstance --DryRun true answers with the error code DryRunOperation when the real call
# would succeed; any other answer (Forbidden.RAM, InvalidInstanceId.NotFound) stops the run.
ecs_dry_run() {
  local node="$1" instance="$2" region="$3" out rc
  local -a call=(ecs RebootInstance --InstanceId "$instance" --DryRun true)
  if [ -n "$region" ]; then call+=(--RegionId "$region"); fi
  if out="$(aliyun "${call[@]}" 2>&1)"; then rc=0; else rc=$?; fi
  if ! grep -q DryRunOperation <<< "$out"; then
    die "$node: the dry run of RebootInstance for $instance did not answer DryRunOperation (exit status $rc): $out"
  fi
}

# ---- the capacity gate ------------------------------------------------------------------------

# The aliyun.com/gpu-mem that the pods on the nodes to drain request must fit into what the
# other Ready, schedulable nodes have free, or the evicted pods stay Pending.
capacity_gate() {
  local -A draining=() used=()
  local -a m=()
  local n name node phase owner mems alloc unsched ready sum need=0 free=0 pods nodes
  for n in "$@"; do draining["$n"]=1; done
  if ! pods="$(k get pods -A -o 'jsonpath={range .items[*]}{.spec.nodeName}{"|"}{.status.phase}{"|"}{.metadata.ownerReferences[0].kind}{"|"}{range .spec.containers[*]}{.resources.limits.aliyun\.com/gpu-mem}{","}{end}{"\n"}{end}' 2>"$ERRF")"; then
    die "cannot list the pods: $(tr '\n' ' ' < "$ERRF")"
  fi
  while IFS='|' read -r node phase owner mems; do
    if [ -z "$node" ] || [ "$phase" = Succeeded ] || [ "$phase" = Failed ]; then continue; fi
    sum=0
    IFS=',' read -r -a m <<< "$mems"
    for alloc in "${m[@]}"; do
      if [[ "$alloc" =~ ^[0-9]+$ ]]; then sum=$((sum + alloc)); fi
    done
    used["$node"]=$(( ${used["$node"]:-0} + sum ))
    if [ -n "${draining[$node]:-}" ] && [ "$owner" != DaemonSet ]; then need=$((need + sum)); fi
  done <<< "$pods"
  if [ "$need" -eq 0 ]; then return 0; fi
  if ! nodes="$(k get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.spec.unschedulable}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"|"}{.status.allocatable.aliyun\.com/gpu-mem}{"\n"}{end}' 2>"$ERRF")"; then
    die "cannot list the nodes: $(tr '\n' ' ' < "$ERRF")"
  fi
  while IFS='|' read -r name unsched ready alloc; do
    if [ -z "$name" ] || [ -n "${draining[$name]:-}" ] || [ "$unsched" = true ] || [ "$ready" != True ]; then continue; fi
    if [[ "$alloc" =~ ^[0-9]+$ ]] && [ "$alloc" -gt "${used[$name]:-0}" ]; then
      free=$((free + alloc - ${used[$name]:-0}))
    fi
  done <<< "$nodes"
  if [ "$need" -gt "$free" ]; then
    die "the pods on $* request $need of aliyun.com/gpu-mem and the other Ready, schedulable nodes have $free free: evicted, they would stay Pending; free capacity or add nodes first"
  fi
  say "capacity: the pods to evict request $need of aliyun.com/gpu-mem, $free is free on the other Ready, schedulable nodes"
}

# ---- deciding ---------------------------------------------------------------------------------

DONE=()
NOT_DONE=()
SKIPPED_CORDONED=0
SKIPPED_NOT_READY=0
declare -A BOOT=() WHY=()

# Decide node i from its own state: DECISION is reboot, load, finish (at the target, cordoned by
# a checklist run: uncordon it) or none. Read-only.
decide() {
  local i="$1" node="${NODES[$1]}" verdict
  DECISION=none
  CURRENT_NODE="$node"
  step read-state
  check_ds
  read_node "$i"
  if [ "$N_READY" != True ]; then
    say "$node is not Ready (Ready=${N_READY:-not reported}): skipped; not done until it is back and shows the target"
    NOT_DONE+=("$node (not Ready)")
    SKIPPED_NOT_READY=$((SKIPPED_NOT_READY + 1))
    return 0
  fi
  read_state "$node" "$DS_SELECTOR" || die "$node: cannot read the cGPU state: $STATE_ERR; nothing was changed on this node"
  verdict="$(judge)"
  case "$verdict" in
    converted)
      if [ -n "$N_MARK" ]; then
        DECISION=finish
        WHY[$i]="at the target, cordoned by a checklist run: uncordon"
      else
        say "$node: $TARGET_TEXT already: nothing to restart"
        DONE+=("$node")
      fi
      return 0 ;;
    unreadable)
      die "$node: the cGPU state cannot be judged (read: $(state_text)); nothing was changed on this node" ;;
  esac
  if [ "$N_UNSCHED" = true ] && [ -z "$N_MARK" ] && [ "$INCLUDE_CORDONED" != 1 ]; then
    say "$node was cordoned before this run: left alone (generate the checklist with --include-cordoned to restart it too)"
    NOT_DONE+=("$node (cordoned before the run)")
    SKIPPED_CORDONED=$((SKIPPED_CORDONED + 1))
    return 0
  fi
  if [ "$verdict" = no-module ]; then
    DECISION=load
    WHY[$i]="the cGPU module is not loaded: its installer pod is recreated and loads it with POLICY $NEW_POLICY (no drain, no reboot)"
  else
    DECISION=reboot
    if [ -n "${INSTANCES[$i]}" ]; then
      WHY[$i]="shows $(state_text) : cordon, drain, reboot ECS instance ${INSTANCES[$i]} (${REGIONS[$i]:-its region}), wait, uncordon"
    else
      WHY[$i]="shows $(state_text) : cordon, drain, then you reboot it by hand (no ECS instance id)"
    fi
  fi
}

# ---- acting -----------------------------------------------------------------------------------

# The node's installer pod must come from the DaemonSet as it is now (image and POLICY): with
# OnDelete an old pod survives a reboot and loads the old module again.
renew_installer_pod() {
  local node="$1"
  step renew-installer-pod
  installer_pod "$node" "$DS_SELECTOR" || die "$node: no cgpu-installer pod to renew"
  if [ "$POD_POLICY" != "$DS_POLICY" ] || [ "$POD_IMAGE" != "$DS_IMAGE" ]; then
    say "$node: installer pod $POD runs POLICY '$POD_POLICY' and $POD_IMAGE, the DaemonSet POLICY '$DS_POLICY' and $DS_IMAGE: deleting it so that the DaemonSet recreates it"
    k -n kube-system delete pod "$POD" --wait=true
  fi
}

# The module is not loaded: a new installer pod installs it with the new POLICY (cGPU: the
# policy takes effect at once where the module was not loaded), no drain, no reboot.
restart_installer_pod() {
  local i="$1" node="${NODES[$1]}"
  CURRENT_NODE="$node"
  step restart-installer-pod
  check_ds
  read_node "$i"
  installer_pod "$node" "$DS_SELECTOR" || die "$node: no cgpu-installer pod to restart"
  CHANGED=1
  k -n kube-system delete pod "$POD" --wait=true
}

take_down() {
  local i="$1" node="${NODES[$1]}" region instance
  CURRENT_NODE="$node"
  step cordon
  check_ds
  read_node "$i"
  CHANGED=1
  if [ "$N_UNSCHED" != true ]; then
    k annotate node "$node" "$MARK=true" --overwrite
    k cordon "$node"
  fi
  step drain
  # `kubectl drain` cordons whatever node has the name: the node once more (UID), so that a node
  # replaced since the cordon is not cordoned and drained in its place.
  read_node "$i"
  k drain "$node" --ignore-daemonsets --delete-emptydir-data --timeout="$DRAIN_TIMEOUT"
  renew_installer_pod "$node"
  step record-boot-id
  read_node "$i"
  BOOT[$node]="$N_BOOT"
  [ -n "${BOOT[$node]}" ] || die "$node: no .status.nodeInfo.bootID to detect the reboot by"
  step reboot
  if [ -z "${INSTANCES[$i]}" ]; then
    die "$node: cordoned and drained; no ECS instance id to reboot it by: reboot it yourself now (console or sudo reboot), then run this again: it finds the node at the target and uncordons it"
  fi
  # Only the instance the node's live providerID names, in the region it names.
  if ! [[ "$N_PROVIDER" =~ ^([a-z0-9-]+)\.(i-[a-z0-9]{8,40})$ ]]; then
    die "$node: spec.providerID '$N_PROVIDER' is not <region>.<instance id>: not rebooting anything"
  fi
  region="${BASH_REMATCH[1]}"
  instance="${BASH_REMATCH[2]}"
  if [ "$instance" != "${INSTANCES[$i]}" ] || { [ -n "${REGIONS[$i]}" ] && [ "$region" != "${REGIONS[$i]}" ]; }; then
    die "$node: the node's live providerID names $region.$instance, the plan recorded ${REGIONS[$i]}.${INSTANCES[$i]}: not rebooting anything"
  fi
  # The DaemonSet once more, right before the reboot: a change since the cordon stops here.
  check_ds
  aliyun ecs RebootInstance --RegionId "$region" --InstanceId "$instance"
}

wait_boot() {
  local i="$1" node="${NODES[$1]}" deadline=$((SECONDS + REBOOT_TIMEOUT))
  while :; do
    read_node "$i"
    if [ -n "$N_BOOT" ] && [ "$N_BOOT" != "${BOOT[$node]}" ]; then return 0; fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      die "$node: the boot id is still ${BOOT[$node]} after ${REBOOT_TIMEOUT}s: the reboot did not happen (check the instance in the ECS console); the node stays cordoned and drained"
    fi
    sleep "$POLL"
  done
}

wait_installer_pod() {
  local node="$1" deadline=$((SECONDS + POD_TIMEOUT))
  while :; do
    if installer_pod "$node" "$DS_SELECTOR" && [ "$POD_READY" = True ] && [ "$POD_POLICY" = "$DS_POLICY" ] && [ "$POD_IMAGE" = "$DS_IMAGE" ]; then
      return 0
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      die "$node: no Ready cgpu-installer pod with POLICY '$DS_POLICY' and $DS_IMAGE after ${POD_TIMEOUT}s"
    fi
    sleep "$POLL"
  done
}

wait_policy() {
  local node="$1" deadline=$((SECONDS + POLICY_TIMEOUT))
  while :; do
    if read_state "$node" "$DS_SELECTOR" && [ "$(judge)" = converted ]; then return 0; fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      die "$node: after ${POLICY_TIMEOUT}s it does not show the target ($TARGET_TEXT); last read: $(state_text)${STATE_ERR:+ ($STATE_ERR)}"
    fi
    sleep "$POLL"
  done
}

# Run in a background job, one per node of the batch: its step goes to $STEPFILE.
bring_up() {
  local i="$1" rebooted="$2" node="${NODES[$1]}"
  CURRENT_NODE="$node"
  if [ "$rebooted" = 1 ]; then
    step wait-boot-id
    wait_boot "$i"
    step wait-node-ready
    k wait --for=condition=Ready "node/$node" --timeout="${READY_TIMEOUT}s"
  fi
  step wait-installer-pod
  wait_installer_pod "$node"
  step wait-policy
  wait_policy "$node"
  step uncordon
  uncordon_if_ours "$i"
  say "$node: $TARGET_TEXT"
}

# One batch: ask once, before its first cordon; then take its nodes down one after another and
# wait for them side by side.
run_batch() {
  local title="$1" i pid failed=0 names=()
  shift
  local -a down=() load=() finish=() jobs=() who=()
  for i in "$@"; do
    case "${KIND[$i]}" in
      reboot) down+=("$i"); names+=("${NODES[$i]}") ;;
      load) load+=("$i") ;;
      finish) finish+=("$i") ;;
    esac
  done
  if [ "${#down[@]}" -gt 0 ]; then
    CURRENT_NODE="${names[*]}"
    step capacity
    capacity_gate "${names[@]}"
  fi
  CURRENT_NODE="$title"
  step confirm
  say "== $title:"
  for i in "$@"; do say "   ${NODES[$i]}: ${WHY[$i]}"; done
  if ! confirm "Go ahead with these $# node(s)?"; then
    die "declined: nothing in this batch was changed"
  fi
  for i in "${finish[@]}"; do
    CURRENT_NODE="${NODES[$i]}"
    step uncordon
    check_ds
    uncordon_if_ours "$i"
    DONE+=("${NODES[$i]}")
  done
  for i in "${down[@]}"; do take_down "$i"; done
  for i in "${load[@]}"; do restart_installer_pod "$i"; done
  for i in "${down[@]}" "${load[@]}"; do
    (
      STEPFILE="$WORK/$i.step"
      ERRF="$WORK/$i.err"
      if [ "${KIND[$i]}" = reboot ]; then bring_up "$i" 1; else bring_up "$i" 0; fi
    ) &
    jobs+=("$!")
    who+=("$i")
  done
  for pid in "${!jobs[@]}"; do
    i="${who[$pid]}"
    if wait "${jobs[$pid]}"; then
      DONE+=("${NODES[$i]}")
    else
      failed=$((failed + 1))
      CURRENT_NODE="${NODES[$i]}"
      CURRENT_STEP='?'
      if [ -f "$WORK/$i.step" ]; then IFS= read -r CURRENT_STEP < "$WORK/$i.step"; fi
      say "error: ${NODES[$i]} stopped at step $CURRENT_STEP" >&2
    fi
  done
  if [ "$failed" -gt 0 ]; then
    die "$failed node(s) of this batch did not come back at the target (above)"
  fi
}

# ---- the run ----------------------------------------------------------------------------------

preflight
CANARY_DONE=0
CANARY_NAME=''
declare -A KIND=()
batch=()
reboots=0
# Nodes cordoned by an earlier run are down already: they may all be in the first batch.
LEFTOVER=0
for i in "${!NODES[@]}"; do
  if [ "${OURS[$i]}" = 1 ]; then LEFTOVER=$((LEFTOVER + 1)); fi
done
flush() {
  local title
  if [ "${#batch[@]}" -eq 0 ]; then return 0; fi
  if [ "$reboots" -gt 0 ] && [ "$CANARY_DONE" = 0 ]; then
    title="canary (the first node that needs a restart; check its GPU workloads after it)"
  elif [ -n "$CANARY_NAME" ] && [ "$CANARY_DONE" = 1 ]; then
    title="batch (the canary $CANARY_NAME is done: check its GPU workloads before you go on)"
    CANARY_NAME=''
  else
    title="batch"
  fi
  run_batch "$title" "${batch[@]}"
  if [ "$reboots" -gt 0 ] && [ "$CANARY_DONE" = 0 ]; then
    CANARY_DONE=1
    for i in "${batch[@]}"; do
      if [ "${KIND[$i]}" = reboot ]; then CANARY_NAME+="${CANARY_NAME:+ }${NODES[$i]}"; fi
    done
  fi
  batch=()
  reboots=0
}
for i in "${!NODES[@]}"; do
  decide "$i"
  KIND[$i]="$DECISION"
  if [ "$DECISION" = none ]; then continue; fi
  batch+=("$i")
  if [ "$DECISION" = reboot ]; then reboots=$((reboots + 1)); fi
  if [ "$CANARY_DONE" = 1 ]; then limit="$MAX_UNAVAILABLE"; else limit=$(( LEFTOVER > 1 ? LEFTOVER : 1 )); fi
  if [ "$reboots" -ge "$limit" ]; then flush; fi
done
flush

for node in "${VERIFY[@]}"; do
  CURRENT_NODE="$node"
  step verify
  if read_state "$node" "$DS_SELECTOR" || { [ -n "$CORE_SELECTOR" ] && read_state "$node" "$CORE_SELECTOR"; }; then
    if [ "$(judge)" = converted ]; then
      DONE+=("$node")
      continue
    fi
    NOT_DONE+=("$node (shows $(state_text))")
  else
    NOT_DONE+=("$node (unverified: $STATE_ERR)")
  fi
  # Left out of this plan because it was cordoned before the change: only a new plan with
  # --include-cordoned restarts it.
  for skipped in "${CORDONED_BEFORE[@]}"; do
    if [ "$skipped" = "$node" ]; then SKIPPED_CORDONED=$((SKIPPED_CORDONED + 1)); fi
  done
done

CURRENT_NODE='-'
step done-check
check_ds
if [ "${#NOT_DONE[@]}" -gt 0 ]; then
  ENDED=1
  say "Ended at step done-check: the run did what it may, and not every GPU-sharing node shows the target." >&2
  say "Done: ${DONE[*]:-none}" >&2
  printf 'Not done (blocking):\n' >&2
  printf '  %s\n' "${NOT_DONE[@]}" >&2
  if [ "$SKIPPED_CORDONED" -gt 0 ] && [ "$INCLUDE_CORDONED" != 1 ]; then
    say "Next: $SKIPPED_CORDONED node(s) were cordoned before the run and left alone: running this again does not help; generate the checklist again with --include-cordoned to restart them too (they stay cordoned)" >&2
  fi
  if [ "$SKIPPED_NOT_READY" -gt 0 ]; then
    say "Next: when the NotReady node(s) are Ready again, run this again (--resume): only they are left" >&2
  fi
  if [ "${#NOT_DONE[@]}" -gt $((SKIPPED_CORDONED + SKIPPED_NOT_READY)) ]; then
    say "Next: the other GPU-sharing nodes above do not show the target: set their installer (cgpu-core-installer, or the node's labels) to POLICY $NEW_POLICY and restart them the same way; this run does not restart them" >&2
  fi
  exit 1
fi
say "All GPU-sharing nodes show the target ($TARGET_TEXT): done."
"#;

pub fn render(list: &Checklist, yes: bool) -> String {
    let mut out = String::from("#!/usr/bin/env bash\n");
    let _ = writeln!(
        out,
        "# cGPU node-reboot checklist, generated by cgpu-lint from {} and {}.",
        comment(&list.current_path),
        comment(&list.desired_label)
    );
    for line in header_lines(list) {
        let _ = writeln!(out, "# {}", comment(&line));
    }
    let (c, d) = (&list.current, &list.desired);
    let _ = writeln!(out, "# Policy {} -> {}.", c.policy, d.policy);
    if let Some((a, b)) = &list.tag_change {
        let _ = writeln!(out, "# cGPU upgrade {} -> {}.", comment(a), comment(b));
    }
    if !list.upgrade.is_empty() {
        out.push_str("# What the upgrade sets (key: live -> after the upgrade, from):\n");
        for k in &list.upgrade {
            let _ = writeln!(
                out,
                "#   {}: {} -> {} ({})",
                k.key,
                comment(k.live.as_deref().unwrap_or("-")),
                comment(k.after.as_deref().unwrap_or("-")),
                k.from.as_str()
            );
        }
    }
    if list.disabled {
        out.push_str("# cGPU is turned off: this script changes nothing (no cordon, no drain, no reboot).\nset -euo pipefail\n");
        for st in &list.removal {
            // The verify command is pinned to the plan's context already (kubectl_prefix).
            let line = match &st.command {
                Some(c) => format!("{}: {c}", st.title),
                None => st.title.clone(),
            };
            let _ = writeln!(out, "printf '%s\\n' {}", quote(&line));
        }
        return out;
    }
    out.push_str(
        "# Review it, then run it: ./checklist.sh [--yes]. After a stop, run it again (--resume):\n\
         # every node is decided from its own state, so converted nodes are not touched twice.\n",
    );
    out.push_str("set -euo pipefail\n");
    if !list.acts() {
        out.push_str("echo 'No reboot needed: the cGPU policy and version do not change.'\n");
        return out;
    }
    let id = &list.options.identity;
    out.push_str("\n# ---- the plan (every name validated when generated, and quoted) ----\n");
    let _ = writeln!(out, "assume_yes={}", u8::from(yes));
    out.push_str("# The cluster the plan is for: every kubectl call passes the context (and kubeconfig);\n# the kube-system namespace UID is checked before any change (empty: recorded at the first run).\n");
    let _ = writeln!(
        out,
        "CONTEXT={}",
        quote(id.context.as_deref().unwrap_or_default())
    );
    let _ = writeln!(
        out,
        "KUBECONFIG_FILE={}",
        quote(id.kubeconfig.as_deref().unwrap_or_default())
    );
    let _ = writeln!(
        out,
        "SERVER={}",
        quote(id.server.as_deref().unwrap_or("unknown API server"))
    );
    let _ = writeln!(
        out,
        "CLUSTER_UID={}",
        quote(id.cluster_uid.as_deref().unwrap_or_default())
    );
    let _ = writeln!(out, "NEW_POLICY={}", quote(&d.policy.to_string()));
    let new_version = if list.tag_change.is_some() {
        core(d).map(ToString::to_string).unwrap_or_default()
    } else {
        String::new()
    };
    let _ = writeln!(out, "NEW_VERSION={}", quote(&new_version));
    let _ = writeln!(out, "TARGET_TEXT={}", quote(&target_text(list)));
    let _ = writeln!(out, "MAX_UNAVAILABLE={}", list.options.max_unavailable);
    let _ = writeln!(out, "DRAIN_TIMEOUT={}", quote(&list.options.drain_timeout));
    let _ = writeln!(
        out,
        "INCLUDE_CORDONED={}",
        u8::from(list.options.include_cordoned)
    );
    let _ = writeln!(out, "MARK={}", quote(CORDON_MARK));
    let _ = writeln!(out, "READ_STATE={}", quote(READ_STATE));
    out.push_str("# The nodes cgpu-installer runs on, in order (the canary is the first that needs a restart,\n# chosen at run time), with the UID and providerID the plan saw (empty: not in the input),\n# the ECS instance and region to reboot (empty: by hand), and whether a checklist run cordoned it.\n");
    out.push_str(&array("NODES", list.nodes.iter().map(|t| t.name.clone())));
    out.push_str(&array(
        "UIDS",
        list.nodes.iter().map(|t| t.uid.clone().unwrap_or_default()),
    ));
    out.push_str(&array(
        "PROVIDERS",
        list.nodes
            .iter()
            .map(|t| t.provider_id.clone().unwrap_or_default()),
    ));
    out.push_str(&array(
        "INSTANCES",
        list.nodes
            .iter()
            .map(|t| t.instance_id.clone().unwrap_or_default()),
    ));
    out.push_str(&array(
        "REGIONS",
        list.nodes
            .iter()
            .map(|t| t.region.clone().unwrap_or_default()),
    ));
    out.push_str(&array(
        "OURS",
        list.nodes.iter().map(|t| u8::from(t.ours).to_string()),
    ));
    out.push_str("# Other GPU-sharing nodes (core_mem, legacy, excluded by a taint, skipped): read at the end.\n");
    out.push_str(&array("VERIFY", list.to_verify().map(|o| o.name.clone())));
    out.push_str("# Of those, the nodes cordoned before the change (left out: --include-cordoned restarts them).\n");
    out.push_str(&array(
        "CORDONED_BEFORE",
        list.to_verify()
            .filter(|o| o.kind == OtherKind::Skipped)
            .map(|o| o.name.clone()),
    ));
    out.push_str("# Findings that make the plan unsafe: the run stops before any step while there are any.\n");
    out.push_str(&array(
        "BLOCKED",
        list.blocking.iter().map(|d| {
            let lc = d.start();
            format!(
                "{} {}:{}:{}: {}",
                d.rule,
                d.file(),
                lc.line,
                lc.column,
                d.message
            )
        }),
    ));
    out.push_str(
        &BODY
            .replace("__NSENTER__", NSENTER)
            .replace("__REBOOT_TIMEOUT__", &REBOOT_TIMEOUT.to_string())
            .replace("__READY_TIMEOUT__", &READY_TIMEOUT.to_string())
            .replace("__POD_TIMEOUT__", &POD_TIMEOUT.to_string())
            .replace("__POLICY_TIMEOUT__", &POLICY_TIMEOUT.to_string())
            .replace("__POLL__", &POLL_INTERVAL.to_string()),
    );
    out
}
