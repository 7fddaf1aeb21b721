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

use super::{
    CORDON_MARK, Checklist, NSENTER, POD_TIMEOUT, POLICY_TIMEOUT, POLL_INTERVAL, READ_STATE,
    READY_TIMEOUT, REBOOT_TIMEOUT, Strategy, core, target_text,
};

/// One shell word holding `s` exactly: nothing inside is expanded. `shlex` (a maintained crate)
/// does the quoting; it refuses only a NUL byte, which a shell word cannot hold and which no
/// validated name contains, so a NUL is dropped rather than failing the whole script.
pub fn quote(s: &str) -> String {
    let clean: String;
    let s = if s.contains('\0') {
        clean = s.replace('\0', "");
        &clean
    } else {
        s
    };
    match shlex::try_quote(s) {
        // shlex leaves a word of only safe characters bare; single quotes around it change
        // nothing for the shell and show a reviewer at a glance that it is one word.
        Ok(q) if q == s => format!("'{s}'"),
        Ok(q) => q.into_owned(),
        Err(_) => "''".into(),
    }
}

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

CURRENT_NODE='-'
CURRENT_STEP='start'
ERRF="$(mktemp)"
on_exit() {
  local rc=$?
  rm -f "$ERRF"
  if [ "$rc" -ne 0 ]; then
    {
      echo
      echo "STOPPED at node $CURRENT_NODE, step $CURRENT_STEP (exit status $rc)."
      echo "Nothing after that step ran. A node this run cordoned keeps its cordon and the annotation $MARK until a later run finishes it."
      echo "Resume: fix the cause, then run: $0 ${args[*]} --resume"
      echo "(every node is decided again from its own state: nodes at the target are skipped, only the others are drained and restarted)"
    } >&2
  fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM

say() { printf '%s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
step() { CURRENT_STEP="$1"; say "--> $CURRENT_NODE: $1"; }

confirm() {
  if [ "$assume_yes" = 1 ]; then return 0; fi
  local answer
  read -r -p "$1 [y/N] " answer
  case "$answer" in [yY]|[yY][eE][sS]) return 0 ;; *) return 1 ;; esac
}

node_field() { kubectl get node "$1" -o "jsonpath=$2"; }

# The installer pod on a node (label selector $2) that is not being deleted.
installer_pod() {
  local node="$1" sel="$2" out name deleting
  out="$(kubectl -n kube-system get pod -l "$sel" --field-selector "spec.nodeName=$node" -o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.metadata.deletionTimestamp}{"\n"}{end}')" || return 1
  while IFS='|' read -r name deleting; do
    if [ -z "$name" ] || [ -n "$deleting" ]; then continue; fi
    if ! [[ "$name" =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]]; then
      echo "unexpected pod name on $node" >&2
      return 1
    fi
    printf '%s\n' "$name"
    return 0
  done <<< "$out"
  return 1
}

pod_policy() {
  kubectl -n kube-system get pod "$1" -o 'jsonpath={.spec.containers[?(@.name=="cgpu-installer")].env[?(@.name=="POLICY")].value}'
}

# The node's cGPU state into STATE (see READ_STATE); 1 with STATE_ERR when it cannot be read.
read_state() {
  local node="$1" sel="$2" pod
  STATE=''
  STATE_ERR=''
  if ! pod="$(installer_pod "$node" "$sel")"; then
    STATE_ERR="no installer pod found on $node"
    return 1
  fi
  if ! STATE="$(kubectl -n kube-system exec "$pod" -- __NSENTER__ sh -c "$READ_STATE" 2>"$ERRF")"; then
    STATE_ERR="exec in pod $pod failed: $(tr '\n' ' ' < "$ERRF")"
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

uncordon_if_ours() {
  local node="$1" mark
  mark="$(node_field "$node" "{.metadata.annotations.$MARK}")"
  if [ -n "$mark" ]; then
    kubectl uncordon "$node"
    kubectl annotate node "$node" "$MARK-"
  elif [ "$(node_field "$node" '{.spec.unschedulable}')" = true ]; then
    say "$node was cordoned before this run: left cordoned (uncordon it when that reason is resolved)"
  fi
}

# ---- pre-flight -------------------------------------------------------------------------------

preflight() {
  local i live image tag version problems desired pods line name node ready policy deleting deadline
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
  step installer-policy
  live="$(kubectl -n kube-system get ds cgpu-installer -o 'jsonpath={.spec.template.spec.containers[?(@.name=="cgpu-installer")].env[?(@.name=="POLICY")].value}')"
  [ "$live" = "$NEW_POLICY" ] || die "cgpu-installer has POLICY '$live', not '$NEW_POLICY': apply the desired values first"
  if [ -n "$NEW_VERSION" ]; then
    step installer-version
    image="$(kubectl -n kube-system get ds cgpu-installer -o 'jsonpath={.spec.template.spec.containers[?(@.name=="cgpu-installer")].image}')"
    tag="${image##*:}"
    version="${tag#v}"
    version="${version%%-*}"
    [ "$version" = "$NEW_VERSION" ] || die "cgpu-installer runs image tag '$tag', not cGPU $NEW_VERSION: apply the desired values first"
  fi
  step installer-health
  STRATEGY="$(kubectl -n kube-system get ds cgpu-installer -o 'jsonpath={.spec.updateStrategy.type}')"
  STRATEGY="${STRATEGY:-RollingUpdate}"
  say "installer updateStrategy: $STRATEGY"
  deadline=$((SECONDS + HEALTH_TIMEOUT))
  while :; do
    problems=''
    desired="$(kubectl -n kube-system get ds cgpu-installer -o 'jsonpath={.status.desiredNumberScheduled}')"
    pods="$(kubectl -n kube-system get pod -l name=cgpu-installer -o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.spec.nodeName}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"|"}{.spec.containers[?(@.name=="cgpu-installer")].env[?(@.name=="POLICY")].value}{"|"}{.metadata.deletionTimestamp}{"\n"}{end}')"
    local count=0 nodes_ready
    nodes_ready="$(kubectl get nodes -o 'jsonpath={range .items[*]}{"|"}{.metadata.name}{"="}{.status.conditions[?(@.type=="Ready")].status}{end}{"|"}')"
    while IFS='|' read -r name node ready policy deleting; do
      if [ -z "$name" ] || [ -n "$deleting" ]; then continue; fi
      count=$((count + 1))
      if [[ "$nodes_ready" != *"|$node=True|"* ]]; then continue; fi
      if [ "$ready" != True ]; then problems+=" pod $name on $node is not Ready;"; fi
      if [ "$STRATEGY" = RollingUpdate ] && [ "$policy" != "$NEW_POLICY" ]; then
        problems+=" pod $name on $node still has POLICY '$policy' (rollout not finished);"
      fi
    done <<< "$pods"
    if [ "$count" -lt "${desired:-0}" ]; then problems+=" $count of $desired pods exist;"; fi
    if [ -z "$problems" ]; then break; fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      die "the cgpu-installer DaemonSet is not healthy:$problems do not restart nodes on top of it"
    fi
    sleep "$POLL"
  done
  step pdb
  pods="$(kubectl get pdb -A -o 'jsonpath={range .items[*]}{.metadata.namespace}{"/"}{.metadata.name}{"|"}{.status.disruptionsAllowed}{"\n"}{end}')"
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
# other schedulable nodes have free, or the evicted pods stay Pending.
capacity_gate() {
  local -A draining=() used=()
  local n name node phase owner mems m alloc unsched need=0 free=0 pods nodes
  for n in "$@"; do draining["$n"]=1; done
  pods="$(kubectl get pods -A -o 'jsonpath={range .items[*]}{.spec.nodeName}{"|"}{.status.phase}{"|"}{.metadata.ownerReferences[0].kind}{"|"}{range .spec.containers[*]}{.resources.limits.aliyun\.com/gpu-mem}{","}{end}{"\n"}{end}')"
  while IFS='|' read -r node phase owner mems; do
    if [ -z "$node" ] || [ "$phase" = Succeeded ] || [ "$phase" = Failed ]; then continue; fi
    local sum=0
    IFS=',' read -r -a m <<< "$mems"
    for alloc in "${m[@]}"; do
      if [[ "$alloc" =~ ^[0-9]+$ ]]; then sum=$((sum + alloc)); fi
    done
    used["$node"]=$(( ${used["$node"]:-0} + sum ))
    if [ -n "${draining[$node]:-}" ] && [ "$owner" != DaemonSet ]; then need=$((need + sum)); fi
  done <<< "$pods"
  if [ "$need" -eq 0 ]; then return 0; fi
  nodes="$(kubectl get nodes -o 'jsonpath={range .items[*]}{.metadata.name}{"|"}{.spec.unschedulable}{"|"}{.status.allocatable.aliyun\.com/gpu-mem}{"\n"}{end}')"
  while IFS='|' read -r name unsched alloc; do
    if [ -z "$name" ] || [ -n "${draining[$name]:-}" ] || [ "$unsched" = true ]; then continue; fi
    if [[ "$alloc" =~ ^[0-9]+$ ]] && [ "$alloc" -gt "${used[$name]:-0}" ]; then
      free=$((free + alloc - ${used[$name]:-0}))
    fi
  done <<< "$nodes"
  if [ "$need" -gt "$free" ]; then
    die "the pods on $* request $need of aliyun.com/gpu-mem and the other schedulable nodes have $free free: evicted, they would stay Pending; free capacity or add nodes first"
  fi
  say "capacity: the pods to evict request $need of aliyun.com/gpu-mem, $free is free elsewhere"
}

# ---- one batch --------------------------------------------------------------------------------

DONE=()
NOT_DONE=()
declare -A BOOT=()

# Decide from the node's own state; sets DECISION to reboot, load or none.
decide() {
  local node="$1" ready unsched mark verdict
  DECISION=none
  CURRENT_NODE="$node"
  step read-state
  IFS='|' read -r ready unsched mark <<< "$(node_field "$node" "{.status.conditions[?(@.type==\"Ready\")].status}|{.spec.unschedulable}|{.metadata.annotations.$MARK}")"
  if [ "$ready" != True ]; then
    say "$node is not Ready (Ready=${ready:-not reported}): skipped; not done until it is back and shows the target"
    NOT_DONE+=("$node (not Ready)")
    return 0
  fi
  read_state "$node" name=cgpu-installer || die "$node: cannot read the cGPU state: $STATE_ERR; nothing was changed on this node"
  verdict="$(judge)"
  case "$verdict" in
    converted)
      say "$node: $TARGET_TEXT already: nothing to restart"
      uncordon_if_ours "$node"
      DONE+=("$node")
      return 0 ;;
    unreadable)
      die "$node: the cGPU state cannot be judged (read: $(state_text)); nothing was changed on this node" ;;
  esac
  if [ "$unsched" = true ] && [ -z "$mark" ] && [ "$INCLUDE_CORDONED" != 1 ]; then
    say "$node was cordoned before this run: left alone (generate with --include-cordoned to restart it too)"
    NOT_DONE+=("$node (cordoned before the run)")
    return 0
  fi
  if [ "$verdict" = no-module ]; then
    say "$node: the cGPU module is not loaded: the installer loads it with the new policy, no reboot"
    DECISION=load
  else
    say "$node: $(state_text) differs from the target: it restarts"
    DECISION=reboot
  fi
}

# OnDelete: the DaemonSet recreates a pod with the new template only when it is deleted.
renew_installer_pod() {
  local node="$1" pod
  if [ "$STRATEGY" != OnDelete ]; then return 0; fi
  step delete-installer-pod
  pod="$(installer_pod "$node" name=cgpu-installer)" || die "$node: no cgpu-installer pod to delete"
  if [ "$(pod_policy "$pod")" != "$NEW_POLICY" ]; then
    kubectl -n kube-system delete pod "$pod" --wait=true
  fi
}

# The module is not loaded: a new installer pod installs it with the new POLICY (cGPU: the
# policy takes effect at once where the module was not loaded), no drain, no reboot.
restart_installer_pod() {
  local node="$1" pod
  step restart-installer-pod
  pod="$(installer_pod "$node" name=cgpu-installer)" || die "$node: no cgpu-installer pod to restart"
  kubectl -n kube-system delete pod "$pod" --wait=true
}

take_down() {
  local i="$1" node="${NODES[$1]}" unsched
  CURRENT_NODE="$node"
  step cordon
  unsched="$(node_field "$node" '{.spec.unschedulable}')"
  if [ "$unsched" != true ]; then
    kubectl annotate node "$node" "$MARK=true" --overwrite
    kubectl cordon "$node"
  fi
  step drain
  kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data --timeout="$DRAIN_TIMEOUT"
  renew_installer_pod "$node"
  step record-boot-id
  BOOT[$node]="$(node_field "$node" '{.status.nodeInfo.bootID}')"
  [ -n "${BOOT[$node]}" ] || die "$node: no .status.nodeInfo.bootID to detect the reboot by"
  step reboot
  if ! confirm "Reboot $node?"; then
    die "$node: reboot declined; it stays cordoned and drained"
  fi
  if [ -n "${INSTANCES[$i]}" ]; then
    local -a call=(ecs RebootInstance --InstanceId "${INSTANCES[$i]}")
    if [ -n "${REGIONS[$i]}" ]; then call+=(--RegionId "${REGIONS[$i]}"); fi
    aliyun "${call[@]}"
  elif [ "$assume_yes" = 1 ]; then
    die "$node: no ECS instance id to reboot it by: reboot it yourself (console or sudo reboot), then run this again"
  else
    read -r -p "No ECS instance id for $node: start its reboot (console or sudo reboot), then press Enter " _
  fi
}

wait_boot() {
  local node="$1" now deadline=$((SECONDS + REBOOT_TIMEOUT))
  while :; do
    now="$(node_field "$node" '{.status.nodeInfo.bootID}')"
    if [ -n "$now" ] && [ "$now" != "${BOOT[$node]}" ]; then return 0; fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      die "$node: the boot id is still ${BOOT[$node]} after ${REBOOT_TIMEOUT}s: the reboot did not happen (check the instance in the ECS console); the node stays cordoned and drained"
    fi
    sleep "$POLL"
  done
}

wait_installer_pod() {
  local node="$1" pod ready deadline=$((SECONDS + POD_TIMEOUT))
  while :; do
    if pod="$(installer_pod "$node" name=cgpu-installer)"; then
      ready="$(kubectl -n kube-system get pod "$pod" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')"
      if [ "$ready" = True ] && [ "$(pod_policy "$pod")" = "$NEW_POLICY" ]; then return 0; fi
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      die "$node: no Ready cgpu-installer pod with POLICY '$NEW_POLICY' after ${POD_TIMEOUT}s"
    fi
    sleep "$POLL"
  done
}

wait_policy() {
  local node="$1" deadline=$((SECONDS + POLICY_TIMEOUT))
  while :; do
    if read_state "$node" name=cgpu-installer && [ "$(judge)" = converted ]; then return 0; fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      die "$node: after ${POLICY_TIMEOUT}s it does not show the target ($TARGET_TEXT); last read: $(state_text)${STATE_ERR:+ ($STATE_ERR)}"
    fi
    sleep "$POLL"
  done
}

bring_up() {
  local node="$1" rebooted="$2"
  CURRENT_NODE="$node"
  if [ "$rebooted" = 1 ]; then
    step wait-boot-id
    wait_boot "$node"
    step wait-node-ready
    kubectl wait --for=condition=Ready "node/$node" --timeout="${READY_TIMEOUT}s"
  fi
  step wait-installer-pod
  wait_installer_pod "$node"
  step wait-policy
  wait_policy "$node"
  step uncordon
  uncordon_if_ours "$node"
  DONE+=("$node")
  say "$node: $TARGET_TEXT"
}

run_batch() {
  local i
  local -a down=() load=() names=()
  for i in "$@"; do
    decide "${NODES[$i]}"
    case "$DECISION" in
      reboot) down+=("$i"); names+=("${NODES[$i]}") ;;
      load) load+=("$i") ;;
    esac
  done
  if [ "${#down[@]}" -gt 0 ]; then
    CURRENT_NODE="${names[*]}"
    step capacity
    capacity_gate "${names[@]}"
  fi
  for i in "${down[@]}"; do take_down "$i"; done
  for i in "${down[@]}"; do bring_up "${NODES[$i]}" 1; done
  for i in "${load[@]}"; do
    CURRENT_NODE="${NODES[$i]}"
    restart_installer_pod "${NODES[$i]}"
    bring_up "${NODES[$i]}" 0
  done
}

# ---- the run ----------------------------------------------------------------------------------

preflight
if [ "${#NODES[@]}" -gt 0 ]; then
  first=0
  if [ "$CANARY" = 1 ]; then
    say "== canary: ${NODES[0]}"
    run_batch 0
    first=1
    if [ "${#NODES[@]}" -gt 1 ]; then
      CURRENT_NODE="${NODES[0]}"
      CURRENT_STEP=canary-check
      confirm "Canary ${NODES[0]} done. Check its GPU workloads. Continue with the other $(( ${#NODES[@]} - 1 )) node(s)?" || die "stopped after the canary"
    fi
  fi
  batch=()
  for ((i = first; i < ${#NODES[@]}; i++)); do
    batch+=("$i")
    if [ "${#batch[@]}" -ge "$MAX_UNAVAILABLE" ]; then
      say "== batch: $(for j in "${batch[@]}"; do printf '%s ' "${NODES[$j]}"; done)"
      run_batch "${batch[@]}"
      batch=()
    fi
  done
  if [ "${#batch[@]}" -gt 0 ]; then
    say "== batch: $(for j in "${batch[@]}"; do printf '%s ' "${NODES[$j]}"; done)"
    run_batch "${batch[@]}"
  fi
fi

for node in "${VERIFY[@]}"; do
  CURRENT_NODE="$node"
  step verify
  if read_state "$node" 'name in (cgpu-installer,cgpu-core-installer)'; then
    if [ "$(judge)" = converted ]; then
      DONE+=("$node")
      continue
    fi
    NOT_DONE+=("$node (shows $(state_text))")
  else
    NOT_DONE+=("$node (unverified: $STATE_ERR)")
  fi
done

CURRENT_NODE='-'
step done-check
if [ "${#NOT_DONE[@]}" -gt 0 ]; then
  say "Done: ${DONE[*]:-none}" >&2
  printf 'Not done (blocking):\n' >&2
  printf '  %s\n' "${NOT_DONE[@]}" >&2
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
    let (c, d) = (&list.current, &list.desired);
    let _ = writeln!(out, "# Policy {} -> {}.", c.policy, d.policy);
    if let Some((a, b)) = &list.tag_change {
        let _ = writeln!(out, "# cGPU upgrade {} -> {}.", comment(a), comment(b));
    }
    out.push_str(
        "# Review it, then run it: ./checklist.sh [--yes]. After a stop, run it again (--resume):\n\
         # every node is decided from its own state, so converted nodes are not touched twice.\n",
    );
    out.push_str("set -euo pipefail\n");
    if !list.change() {
        out.push_str("echo 'No reboot needed: the cGPU policy and version do not change.'\n");
        return out;
    }
    out.push_str("\n# ---- the plan (every name validated when generated, and quoted) ----\n");
    let _ = writeln!(out, "assume_yes={}", u8::from(yes));
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
    let _ = writeln!(
        out,
        "STRATEGY={}  # read again from the cluster at run time",
        quote(list.strategy.unwrap_or(Strategy::RollingUpdate).as_str())
    );
    let _ = writeln!(out, "MARK={}", quote(CORDON_MARK));
    let _ = writeln!(out, "READ_STATE={}", quote(READ_STATE));
    out.push_str("# The nodes cgpu-installer runs on, the canary first; instance ids and regions for\n# aliyun ecs RebootInstance (empty: reboot by hand).\n");
    out.push_str(&array("NODES", list.nodes.iter().map(|t| t.name.clone())));
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
    let _ = writeln!(
        out,
        "CANARY={}",
        u8::from(list.nodes.first().is_some_and(|t| t.canary))
    );
    out.push_str("# Other GPU-sharing nodes (core_mem, legacy, excluded by a taint, skipped): read at the end.\n");
    out.push_str(&array("VERIFY", list.to_verify().map(|o| o.name.clone())));
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
