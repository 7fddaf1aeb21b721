# shellcheck shell=bash disable=SC2154,SC2153
# The runbook's body (src/checklist/runbook.sh): the plan's variables (CONTEXT, NODES, MARK, …),
# which `cgpu-lint checklist --format shell` writes before it, are not assigned in this file.
REBOOT_TIMEOUT="${CGPU_CHECKLIST_REBOOT_TIMEOUT:-__REBOOT_TIMEOUT__}"
READY_TIMEOUT="${CGPU_CHECKLIST_READY_TIMEOUT:-__READY_TIMEOUT__}"
POD_TIMEOUT="${CGPU_CHECKLIST_POD_TIMEOUT:-__POD_TIMEOUT__}"
POLICY_TIMEOUT="${CGPU_CHECKLIST_POLICY_TIMEOUT:-__POLICY_TIMEOUT__}"
HEALTH_TIMEOUT="${CGPU_CHECKLIST_HEALTH_TIMEOUT:-__POD_TIMEOUT__}"
POLL="${CGPU_CHECKLIST_POLL:-__POLL__}"
# Planned from files, the cluster's identity is recorded here at the first run and compared
# at every later one.
IDENTITY_FILE="${CGPU_CHECKLIST_IDENTITY_FILE:-$0.cluster-uid}"

# The cluster lock: one Lease in kube-system for every cgpu-lint rollout, held for LEASE_SECONDS
# and renewed every third of it while the run works.
LEASE_SECONDS="${CGPU_CHECKLIST_LEASE_SECONDS:-__LEASE_SECONDS__}"
LEASE=__LEASE__

usage() { echo "usage: $0 [--yes] [--resume] [--break-lock]   (--yes: no prompts; --resume: the same as running it again; --break-lock: take the cluster lock from a holder that is gone)" >&2; }
args=()
break_lock=0
for arg in "$@"; do
  case "$arg" in
    --yes|-y) assume_yes=1; args+=("$arg") ;;
    --resume) ;;
    --break-lock) break_lock=1 ;;
    *) usage; exit 2 ;;
  esac
done
# This script as the operator ran it: `./checklist.sh` when it was run by a path to an
# executable file, `bash checklist.sh` otherwise.
if [[ "$0" == */* ]] && [ -x "$0" ]; then RERUN="$(printf '%q' "$0")"; else RERUN="bash $(printf '%q' "$0")"; fi
for arg in "${args[@]}"; do RERUN+=" $(printf '%q' "$arg")"; done
if [ "${BASH_VERSINFO[0]}" -lt 4 ] || { [ "${BASH_VERSINFO[0]}" -eq 4 ] && [ "${BASH_VERSINFO[1]}" -lt 4 ]; }; then
  echo "error: bash 4.4 or later is needed (this is $BASH_VERSION)" >&2
  exit 2
fi
shopt -s inherit_errexit
if ! [[ "$LEASE_SECONDS" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: CGPU_CHECKLIST_LEASE_SECONDS must be a number of seconds, not '$LEASE_SECONDS'" >&2
  exit 2
fi

# Every kubectl call goes through k: pinned to the plan's context (and kubeconfig).
KCTL=()
if [ -n "$CONTEXT" ]; then KCTL+=(--context "$CONTEXT"); fi
if [ -n "$KUBECONFIG_FILE" ]; then KCTL+=(--kubeconfig "$KUBECONFIG_FILE"); fi
k() { kubectl "${KCTL[@]}" "$@"; }

CURRENT_NODE='-'
CURRENT_STEP='start'
CHANGED=0
ENDED=0
# The one next step a stop prints (next_step): resume, replan, apply, declined, identity,
# context, lock, budget.
NEXT=resume
LOCK_HELD=0
KEEPER=''
MAIN_PID=$$
WORK="$(mktemp -d)"
ERRF="$WORK/err"
STEPFILE=''

next_step() {
  case "$NEXT" in
    replan)
      echo "Next: plan again: generate the checklist again from the cluster as it is now (cgpu-lint checklist ...), review it and run the new script; this one will not go on" ;;
    apply)
      echo "Next: apply the desired values first (helm upgrade), wait until the cgpu-installer rollout is done (every installer pod Ready), then run: $RERUN" ;;
    declined)
      echo "Next: you declined; nothing in that batch was changed. Run it again when ready: $RERUN" ;;
    identity)
      echo "Next: if the first run of this script was on the wrong cluster, delete $IDENTITY_FILE and run it again: $RERUN; otherwise this context is another cluster: use a plan made for it" ;;
    context)
      echo "Next: the context $CONTEXT may point at another cluster (nothing was recorded or changed): check which cluster the kubeconfig names for it, then run: $RERUN" ;;
    lock)
      echo "Next: wait until the other run ends and run this again: $RERUN; if its holder is gone (its host or process no longer runs it), take the lock over with: $RERUN --break-lock" ;;
    budget)
      echo "Next: bring the nodes that hold the budget back (Ready and uncordoned: a run of their plan finishes a node cgpu-lint cordoned), then run: $RERUN --resume" ;;
    *)
      echo "Resume: fix the cause, then run: $RERUN --resume"
      echo "(every node is decided again from its own state: nodes at the target are skipped, only the others are drained and restarted)" ;;
  esac
}

on_exit() {
  local rc=$?
  set +e
  lock_release
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
      next_step
    } >&2
  fi
}
trap on_exit EXIT
trap 'exit 130' INT TERM

say() { printf '%s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
# die with the next step that fits the stop (see next_step).
fail() { NEXT="$1"; shift; die "$@"; }
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
    [ "$uid" = "$CLUSTER_UID" ] || fail replan "context $CONTEXT is another cluster: kube-system UID $uid, the plan is for $CLUSTER_UID ($SERVER); nothing was changed"
  elif [ -f "$IDENTITY_FILE" ]; then
    IFS= read -r recorded < "$IDENTITY_FILE" || recorded=''
    [ "$uid" = "$recorded" ] || fail identity "context $CONTEXT is another cluster: kube-system UID $uid, an earlier run of this plan recorded $recorded in $IDENTITY_FILE; nothing was changed"
  else
    # Recorded only once the first node matches the plan (read_node): a first run on the wrong
    # cluster must not lock the right one out.
    PENDING_IDENTITY="$uid"
    say "cluster identity: kube-system UID $uid (recorded in $IDENTITY_FILE once the first node matches the plan)"
  fi
  CLUSTER_UID="$uid"
}

PENDING_IDENTITY=''
record_identity() {
  [ -n "$PENDING_IDENTITY" ] || return 0
  printf '%s\n' "$PENDING_IDENTITY" > "$IDENTITY_FILE" || die "cannot record the cluster identity in $IDENTITY_FILE (set CGPU_CHECKLIST_IDENTITY_FILE)"
  say "cluster identity: kube-system UID $PENDING_IDENTITY recorded in $IDENTITY_FILE (node ${NODES[$1]} matches the plan): later runs compare with it"
  PENDING_IDENTITY=''
}

# Reads node i into N_UID N_PROVIDER N_READY N_UNSCHED N_MARK N_BOOT N_UPGRADE N_KURED; stops
# when the node cannot be read (deleted) or is not the node the plan was made for (replaced:
# another UID or instance).
read_node() {
  local i="$1" node="${NODES[$1]}" out
  if ! out="$(k get node "$node" -o __NODE_JSONPATH__ 2>"$ERRF")"; then
    if [ -n "$PENDING_IDENTITY" ] && grep -q NotFound "$ERRF"; then
      fail context "$node: no such node behind context $CONTEXT: the context may point at another cluster"
    fi
    fail replan "$node: cannot read the node: $(tr '\n' ' ' < "$ERRF")"
  fi
  IFS='|' read -r N_UID N_PROVIDER N_READY N_UNSCHED N_MARK N_BOOT N_UPGRADE N_KURED <<< "$out"
  if [ -n "${UIDS[$i]}" ] && [ "$N_UID" != "${UIDS[$i]}" ]; then
    if [ -n "$PENDING_IDENTITY" ]; then
      fail context "$node: node UID is ${N_UID:-missing}, the plan is for ${UIDS[$i]}: the context $CONTEXT may point at another cluster (or the node was replaced since the plan)"
    fi
    fail replan "$node: node UID is ${N_UID:-missing}, the plan is for ${UIDS[$i]}: the node was replaced since the plan; generate the checklist again"
  fi
  if [ -n "${PROVIDERS[$i]}" ] && [ "$N_PROVIDER" != "${PROVIDERS[$i]}" ]; then
    if [ -n "$PENDING_IDENTITY" ]; then
      fail context "$node: spec.providerID is '${N_PROVIDER}', the plan is for '${PROVIDERS[$i]}': the context $CONTEXT may point at another cluster (or the node was replaced since the plan)"
    fi
    fail replan "$node: spec.providerID is '${N_PROVIDER}', the plan is for '${PROVIDERS[$i]}': the node was replaced since the plan; generate the checklist again"
  fi
  record_identity "$i"
}

# ---- the installer DaemonSet ------------------------------------------------------------------

# The DaemonSet as it is now into DS_POLICY DS_IMAGE DS_STRATEGY DS_SELECTOR DS_GENERATION.
read_ds() {
  local out labels value
  if ! out="$(k -n kube-system get ds cgpu-installer -o 'jsonpath={.spec.template.spec.containers[?(@.name=="cgpu-installer")].env[?(@.name=="POLICY")].value}|{.spec.template.spec.containers[?(@.name=="cgpu-installer")].image}|{.spec.updateStrategy.type}|{.spec.selector.matchLabels}|{.spec.selector.matchExpressions}|{.metadata.generation}' 2>"$ERRF")"; then
    die "cannot read the cgpu-installer DaemonSet: $(tr '\n' ' ' < "$ERRF")"
  fi
  IFS='|' read -r DS_POLICY DS_IMAGE DS_STRATEGY labels value DS_GENERATION <<< "$out"
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

# The cGPU version of an image's tag (v1.5.10-2b9e7d4-aliyun -> 1.5.10).
image_version() {
  local tag="${1##*:}" v
  [[ "$1" == *:* ]] || { printf '\n'; return 0; }
  v="${tag#v}"
  printf '%s\n' "${v%%-*}"
}

# The DaemonSet as it is now against what the plan was made for: the POLICY, the image (and so
# the cGPU version every restarted node comes back with), the update strategy and the pod
# selector. A difference stops before the next change: a `helm upgrade` between the plan and the
# run (or during it) may have changed the version the nodes would reboot into.
check_plan() {
  local what='' version
  version="$(image_version "$DS_IMAGE")"
  if [ "$DS_POLICY" != "$NEW_POLICY" ]; then what+=" POLICY '$DS_POLICY' (the plan: '$NEW_POLICY');"; fi
  if [ -n "$PLAN_IMAGE" ] && [ "$DS_IMAGE" != "$PLAN_IMAGE" ]; then
    what+=" image $DS_IMAGE, cGPU ${version:-unknown} (the plan: $PLAN_IMAGE, cGPU ${PLAN_VERSION:-unknown});"
  elif [ -n "$PLAN_VERSION" ] && [ "$version" != "$PLAN_VERSION" ]; then
    what+=" image $DS_IMAGE, cGPU ${version:-unknown} (the plan: cGPU $PLAN_VERSION);"
  fi
  if [ -n "$PLAN_STRATEGY" ] && [ "$DS_STRATEGY" != "$PLAN_STRATEGY" ]; then what+=" updateStrategy $DS_STRATEGY (the plan: $PLAN_STRATEGY);"; fi
  if [ -n "$PLAN_SELECTOR" ] && [ "$DS_SELECTOR" != "$PLAN_SELECTOR" ]; then what+=" pod selector $DS_SELECTOR (the plan: $PLAN_SELECTOR);"; fi
  if [ -z "$what" ]; then return 0; fi
  # Nothing applied yet: the DaemonSet still runs what it ran when the plan was made.
  if [ "$DS_POLICY" != "$NEW_POLICY" ] && [ "$CHANGED" = 0 ] && { [ -z "$LIVE_IMAGE" ] || [ "$DS_IMAGE" = "$LIVE_IMAGE" ] || [ "$DS_IMAGE" = "$PLAN_IMAGE" ]; }; then
    fail apply "cgpu-installer has POLICY '$DS_POLICY' and $DS_IMAGE, not what the plan is for (POLICY '$NEW_POLICY'${PLAN_IMAGE:+, $PLAN_IMAGE}): apply the desired values first"
  fi
  if [ -z "$PLAN_IMAGE" ] && [ -n "$PLAN_VERSION" ] && [ "$DS_POLICY" = "$NEW_POLICY" ] && [ "$CHANGED" = 0 ] && [ "$DS_IMAGE" = "$LIVE_IMAGE" ] && [ "$version" != "$PLAN_VERSION" ]; then
    fail apply "cgpu-installer runs $DS_IMAGE (cGPU ${version:-unknown}), not cGPU $PLAN_VERSION: apply the desired values first"
  fi
  fail replan "the cgpu-installer DaemonSet is not what this plan was made for:$what someone changed it since the plan (a helm upgrade, an edit); no node is restarted into it: plan again"
}

# Read again before each change: a change by someone else since the plan or mid-run (a
# rollback, a second helm upgrade) stops the run; so does a lost cluster lock.
check_ds() {
  local policy="$DS_POLICY" image="$DS_IMAGE" strategy="$DS_STRATEGY" selector="$DS_SELECTOR" generation="$DS_GENERATION"
  check_lock
  read_ds
  if [ "$DS_POLICY" != "$policy" ] || [ "$DS_IMAGE" != "$image" ] || [ "$DS_STRATEGY" != "$strategy" ] || [ "$DS_SELECTOR" != "$selector" ]; then
    fail replan "the cgpu-installer DaemonSet changed during the run (generation $generation -> $DS_GENERATION: POLICY '$policy' -> '$DS_POLICY', image $image -> $DS_IMAGE, updateStrategy $strategy -> $DS_STRATEGY): someone else is changing it; stop, find out who, and plan again"
  fi
  if [ "$DS_GENERATION" != "$generation" ]; then
    say "note: the cgpu-installer DaemonSet changed (generation $generation -> $DS_GENERATION), not in its POLICY, image, update strategy or selector: going on"
  fi
  check_plan
}

# The installer pod on a node (label selector $2) that is not being deleted, into POD, with
# POD_POLICY POD_IMAGE POD_READY; 1 when there is none.
installer_pod() {
  local node="$1" sel="$2" out name deleting policy image ready
  POD=''
  if ! out="$(k -n kube-system get pod -l "$sel" --field-selector "spec.nodeName=$node" -o __POD_JSONPATH__ 2>"$ERRF")"; then
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

# ---- the cluster lock -----------------------------------------------------------------------

# One rollout at a time: a coordination.k8s.io/v1 Lease in kube-system, the same name for every
# cgpu-lint rollout of the cluster. Created atomically (AlreadyExists: someone holds it), renewed
# by a background keeper with resourceVersion-guarded updates (a lost race is a 409 Conflict, never
# two holders), released at every clean stop. A holder that is gone leaves a Lease that expires
# after LEASE_SECONDS; an expired one is taken over with the same guard.

# A word safe inside the Lease's JSON and in messages.
safe_word() { printf '%s' "$1" | tr -c 'A-Za-z0-9._@:/+-' '_'; }
now_micro() { date -u +%Y-%m-%dT%H:%M:%S.000000Z; }

LEASE_USER="$(safe_word "${USER:-$(id -un)}")"
LEASE_HOST="$(safe_word "$(uname -n)")"
HOLDER="$LEASE_USER@$LEASE_HOST/pid-$$/plan-$PLAN_ID"
LEASE_ACQUIRED=''

# The Lease as this run holds it; $1: the resourceVersion read (empty: a create).
lease_json() {
  local rv="$1" meta_rv=''
  if [ -n "$rv" ]; then meta_rv="\"resourceVersion\":\"$rv\","; fi
  printf '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"%s","namespace":"kube-system",%s"labels":{"app.kubernetes.io/managed-by":"cgpu-lint"},"annotations":{"cgpu-lint/user":"%s","cgpu-lint/host":"%s","cgpu-lint/pid":"%s","cgpu-lint/plan":"%s","cgpu-lint/script":"%s"}},"spec":{"holderIdentity":"%s","leaseDurationSeconds":%d,"acquireTime":"%s","renewTime":"%s"}}\n' \
    "$LEASE" "$meta_rv" "$LEASE_USER" "$LEASE_HOST" "$$" "$PLAN_ID" "$(safe_word "$0")" "$HOLDER" "$LEASE_SECONDS" "$LEASE_ACQUIRED" "$(now_micro)"
}

# PUT the Lease with the resourceVersion $1; prints the new resourceVersion. The JSON is this
# script's own: no client-side schema validation (it needs the API server's OpenAPI document).
# A renewal gives up after a third of the lock's duration, so that a stop never waits long.
lease_put() {
  local limit=$(( LEASE_SECONDS / 3 ))
  if [ "$limit" -lt 2 ]; then limit=2; fi
  lease_json "$1" | k replace --validate=false --request-timeout="${limit}s" -f - -o 'jsonpath={.metadata.resourceVersion}'
}

# The Lease as it is into L_HOLDER L_RENEW L_SECONDS L_RV L_ACQUIRED L_USER L_HOST L_PID L_PLAN; 1 when
# there is none.
lease_read() {
  local out
  if ! out="$(k -n kube-system get lease "$LEASE" -o 'jsonpath={.spec.holderIdentity}|{.spec.renewTime}|{.spec.leaseDurationSeconds}|{.metadata.resourceVersion}|{.spec.acquireTime}|{.metadata.annotations.cgpu-lint/user}|{.metadata.annotations.cgpu-lint/host}|{.metadata.annotations.cgpu-lint/pid}|{.metadata.annotations.cgpu-lint/plan}' 2>"$ERRF")"; then
    if grep -q NotFound "$ERRF"; then return 1; fi
    fail resume "cannot read the cluster lock (lease kube-system/$LEASE): $(tr '\n' ' ' < "$ERRF")"
  fi
  IFS='|' read -r L_HOLDER L_RENEW L_SECONDS L_RV L_ACQUIRED L_USER L_HOST L_PID L_PLAN <<< "$out"
}

lease_forbidden() {
  fail resume "cannot $1 the cluster lock (lease kube-system/$LEASE): $(tr '\n' ' ' < "$ERRF") Nothing was changed. The run needs, in kube-system, a Role with: apiGroups [coordination.k8s.io], resources [leases], verbs [create]; and verbs [get, update, delete] on resourceNames [$LEASE] (docs/runbook.md, \"The cluster lock\")"
}

lock_take() {
  local out now renew expires='' rv
  LEASE_ACQUIRED="$(now_micro)"
  if out="$(lease_json '' | k create --validate=false -f - -o 'jsonpath={.metadata.resourceVersion}' 2>"$ERRF")"; then
    printf '%s\n' "$out" > "$WORK/lease-rv"
    LOCK_HELD=1
    say "cluster lock: taken (lease kube-system/$LEASE, holder $HOLDER, ${LEASE_SECONDS}s, renewed while this run works)"
    lock_keep >"$WORK/lease-keeper.log" 2>&1 &
    KEEPER=$!
    return 0
  fi
  if grep -q Forbidden "$ERRF"; then lease_forbidden create; fi
  grep -q AlreadyExists "$ERRF" || fail resume "cannot create the cluster lock (lease kube-system/$LEASE): $(tr '\n' ' ' < "$ERRF")"
  if ! lease_read; then
    fail lock "the cluster lock (lease kube-system/$LEASE) was just released by another run: run this again"
  fi
  now="$(date -u +%s)"
  # GNU date reads the RFC 3339 time; where it cannot, the lock counts as unexpired.
  if ! renew="$(date -u -d "$L_RENEW" +%s 2>"$ERRF")"; then renew=''; fi
  if [ -n "$renew" ] && [[ "$L_SECONDS" =~ ^[0-9]+$ ]]; then expires=$((renew + L_SECONDS)); fi
  local who="${L_HOLDER:-nobody} (user ${L_USER:-?} on ${L_HOST:-?}, pid ${L_PID:-?}, plan ${L_PLAN:-?}) since ${L_ACQUIRED:-?}, last renewed ${L_RENEW:-?} for ${L_SECONDS:-?}s"
  if [ -n "$L_HOLDER" ] && [ "$break_lock" != 1 ] && { [ -z "$expires" ] || [ "$now" -lt "$expires" ]; }; then
    fail lock "another rollout holds the cluster lock (lease kube-system/$LEASE): $who; this run changed nothing"
  fi
  if [ -z "$L_HOLDER" ]; then
    say "cluster lock: free (released), taking it"
  elif [ "$break_lock" = 1 ] && { [ -z "$expires" ] || [ "$now" -lt "$expires" ]; }; then
    say "cluster lock: --break-lock: breaking the lock of $who"
  else
    say "cluster lock: the lock of $who expired at $(date -u -d "@$expires" +%Y-%m-%dT%H:%M:%SZ): taking it over"
  fi
  # The resourceVersion read guards the takeover: a second run taking it at the same time gets
  # a 409 Conflict.
  if ! rv="$(lease_put "$L_RV" 2>"$ERRF")"; then
    if grep -q Forbidden "$ERRF"; then lease_forbidden update; fi
    fail lock "another run took the cluster lock (lease kube-system/$LEASE) first: $(tr '\n' ' ' < "$ERRF"); this run changed nothing"
  fi
  printf '%s\n' "$rv" > "$WORK/lease-rv"
  LOCK_HELD=1
  say "cluster lock: taken (lease kube-system/$LEASE, holder $HOLDER)"
  lock_keep >"$WORK/lease-keeper.log" 2>&1 &
  KEEPER=$!
}

# The keeper (a background job): renews every third of LEASE_SECONDS; a Conflict or a Lease gone
# means another run took it: the main run stops before its next change (check_lock).
lock_keep() {
  local rv last=$SECONDS err="$WORK/lease-keeper.err" every=$(( LEASE_SECONDS / 3 ))
  trap - INT TERM
  if [ "$every" -lt 1 ]; then every=1; fi
  # One second at a time: a keeper whose run is gone (killed without its clean stop) ends
  # within a second, and no sleep outlives the run by more than that.
  while sleep 1; do
    kill -0 "$MAIN_PID" 2>"$err" || exit 0
    # The run is stopping (lock_release): the last resourceVersion written is the one it reads.
    [ ! -e "$WORK/lease-stop" ] || exit 0
    [ -e "$WORK/lease-rv" ] || exit 0
    if [ $((SECONDS - last)) -lt "$every" ]; then continue; fi
    IFS= read -r rv < "$WORK/lease-rv" || exit 0
    if rv="$(lease_put "$rv" 2>"$err")"; then
      printf '%s\n' "$rv" > "$WORK/lease-rv.new" && mv -f "$WORK/lease-rv.new" "$WORK/lease-rv"
      last=$SECONDS
    elif grep -q -e Conflict -e NotFound "$err"; then
      printf 'another run took it: %s\n' "$(tr '\n' ' ' < "$err")" > "$WORK/lock-lost"
      exit 0
    elif [ $((SECONDS - last)) -ge "$LEASE_SECONDS" ]; then
      printf 'not renewed for %ss: %s\n' "$LEASE_SECONDS" "$(tr '\n' ' ' < "$err")" > "$WORK/lock-lost"
      exit 0
    fi
  done
}

# Before every change: this run still holds the lock.
check_lock() {
  if [ "$LOCK_HELD" = 1 ] && [ -e "$WORK/lock-lost" ]; then
    LOCK_HELD=0
    fail lock "this run lost the cluster lock (lease kube-system/$LEASE): $(cat "$WORK/lock-lost"); it stops before its next change"
  fi
}

# At every stop: the keeper first (asked to stop, so that no renewal is in flight, and waited
# for: at most one renewal's time), then the Lease, only while this run still holds it.
lock_release() {
  local waited=0
  if [ -n "$KEEPER" ]; then
    : > "$WORK/lease-stop"
    while kill -0 "$KEEPER" 2>"$ERRF" && [ "$waited" -lt "$LEASE_SECONDS" ]; do
      sleep 0.2
      waited=$((waited + 1))
    done
    # Still there after that (a renewal that hangs): it is ended; its status does not matter.
    kill "$KEEPER" 2>"$ERRF"
    wait "$KEEPER" 2>"$ERRF"
    KEEPER=''
  fi
  [ "$LOCK_HELD" = 1 ] || return 0
  LOCK_HELD=0
  if ! lease_read; then return 0; fi
  # The holder names this run (user, host, pid and plan): another run that took the lock over
  # (expired, --break-lock) wrote its own.
  if [ "$L_HOLDER" != "$HOLDER" ]; then
    say "warning: the cluster lock is held by $L_HOLDER now, not by this run: left as it is" >&2
    return 0
  fi
  if k -n kube-system delete lease "$LEASE" --wait=false >/dev/null 2>"$ERRF"; then
    say "cluster lock: released"
  else
    say "warning: could not release the cluster lock (lease kube-system/$LEASE): $(tr '\n' ' ' < "$ERRF"); it expires after ${LEASE_SECONDS}s" >&2
  fi
}

# ---- other actors and the budget ---------------------------------------------------------------

# Nodes kured holds its reboot lock on (the weave.works/kured-node-lock annotation of its
# DaemonSet, any namespace), into KURED_NODES (|name|name|).
read_kured() {
  local out
  KURED_NODES='|'
  if ! out="$(k get ds --all-namespaces -o 'jsonpath={range .items[*]}{.metadata.annotations.weave\.works/kured-node-lock}{"\n"}{end}' 2>"$ERRF")"; then
    say "warning: cannot list the DaemonSets to see kured's reboot lock: $(tr '\n' ' ' < "$ERRF")" >&2
    return 0
  fi
  while [[ "$out" =~ \"nodeID\":\"([A-Za-z0-9.-]+)\" ]]; do
    KURED_NODES+="${BASH_REMATCH[1]}|"
    out="${out/"${BASH_REMATCH[0]}"/}"
  done
}

# Another actor is working on node i (read_node just read it): the NVIDIA GPU Operator's driver
# upgrade (nvidia.com/gpu-driver-upgrade-state other than upgrade-done) or kured (its lock, or its
# reboot-in-progress annotation). Prints why, or nothing.
other_actor() {
  local node="${NODES[$1]}"
  if [ -n "$N_UPGRADE" ] && [ "$N_UPGRADE" != upgrade-done ]; then
    printf 'the NVIDIA GPU Operator is upgrading its driver (nvidia.com/gpu-driver-upgrade-state=%s)\n' "$(safe_word "$N_UPGRADE")"
  elif [[ "$KURED_NODES" == *"|$node|"* ]]; then
    printf 'kured holds its reboot lock on it (weave.works/kured-node-lock)\n'
  elif [ -n "$N_KURED" ]; then
    printf 'kured is rebooting it (weave.works/kured-reboot-in-progress)\n'
  fi
}

# Marked nodes (cgpu-lint/cordoned, from this or any earlier run of any plan) that are NotReady
# or still cordoned are down: they count against the budget (1 for the canary, then
# --max-unavailable) before a new node is taken. The arguments are the nodes about to be taken
# (a batch, or one node): a node of them that carries the mark already is down already.
budget_check() {
  local cap out name ready unsched mark i new=0 held=() who=()
  local -A going=()
  if [ "$CANARY_DONE" = 1 ]; then cap="$MAX_UNAVAILABLE"; else cap=1; fi
  for i in "$@"; do going["${NODES[$i]}"]="$i"; done
  if ! out="$(k get nodes -o "jsonpath={range .items[*]}{.metadata.name}{\"|\"}{.status.conditions[?(@.type==\"Ready\")].status}{\"|\"}{.spec.unschedulable}{\"|\"}{.metadata.annotations.$MARK}{\"\\n\"}{end}" 2>"$ERRF")"; then
    die "cannot list the nodes: $(tr '\n' ' ' < "$ERRF")"
  fi
  local -A marked=()
  while IFS='|' read -r name ready unsched mark; do
    if [ -z "$name" ] || [ -z "$mark" ]; then continue; fi
    marked["$name"]=1
    if [ -n "${going[$name]:-}" ]; then continue; fi
    if [ "$ready" != True ]; then
      held+=("$name (NotReady)")
    elif [ "$unsched" = true ]; then
      held+=("$name (cordoned)")
    fi
  done <<< "$out"
  for i in "$@"; do
    if [ "${KIND[$i]}" = reboot ] && [ -z "${marked[${NODES[$i]}]:-}" ]; then
      new=$((new + 1))
      who+=("${NODES[$i]}")
    fi
  done
  if [ "$new" -gt 0 ] && [ $(( ${#held[@]} + new )) -gt "$cap" ]; then
    fail budget "${who[*]}: not taken: ${#held[@]} node(s) cordoned by a cgpu-lint run are down or still cordoned and hold the budget of $cap (${held[*]}); no more nodes go down until they are back"
  fi
}

# The nodes in the order they are taken: those a checklist run cordoned first (they are down
# already and finished before a new node goes down), then the plan's order.
order_nodes() {
  local out name ready unsched mark i
  local -A marked=()
  ORDER=()
  if ! out="$(k get nodes -o "jsonpath={range .items[*]}{.metadata.name}{\"|\"}{.status.conditions[?(@.type==\"Ready\")].status}{\"|\"}{.spec.unschedulable}{\"|\"}{.metadata.annotations.$MARK}{\"\\n\"}{end}" 2>"$ERRF")"; then
    die "cannot list the nodes: $(tr '\n' ' ' < "$ERRF")"
  fi
  while IFS='|' read -r name ready unsched mark; do
    if [ -n "$name" ] && [ -n "$mark" ]; then marked["$name"]=1; fi
  done <<< "$out"
  for i in "${!NODES[@]}"; do
    if [ -n "${marked[${NODES[$i]}]:-}" ]; then ORDER+=("$i"); fi
  done
  for i in "${!NODES[@]}"; do
    if [ -z "${marked[${NODES[$i]}]:-}" ]; then ORDER+=("$i"); fi
  done
}

# ---- pre-flight -------------------------------------------------------------------------------

preflight() {
  local out i problems desired pods name node ready policy image deleting deadline nodes_ready count
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
    fail replan "the plan is unsafe until these findings are fixed; fix them and generate the checklist again"
  fi
  step cluster-identity
  check_cluster
  step installer-policy
  read_ds
  check_plan
  say "installer: POLICY '$DS_POLICY', $DS_IMAGE (cGPU $(image_version "$DS_IMAGE")), generation ${DS_GENERATION:-?} (planned at ${PLAN_GENERATION:-an unknown generation}): as planned"
  step cluster-lock
  lock_take
  step other-actors
  read_kured
  for i in "${!NODES[@]}"; do
    if [[ "$KURED_NODES" == *"|${NODES[$i]}|"* ]]; then
      say "note: kured holds its reboot lock on ${NODES[$i]}: it is not taken while kured holds it"
    fi
  done
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
SKIPPED_OTHER=0
declare -A BOOT=() WHY=()

# Decide node i from its own state: DECISION is reboot, load, finish (at the target, cordoned by
# a checklist run: uncordon it) or none. Read-only.
decide() {
  local i="$1" node="${NODES[$1]}" verdict actor
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
  actor="$(other_actor "$i")"
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
  if [ -n "$actor" ]; then
    say "$node: $actor: not taken while it works on the node"
    NOT_DONE+=("$node (another actor: $actor)")
    SKIPPED_OTHER=$((SKIPPED_OTHER + 1))
    return 0
  fi
  if [ "$verdict" = no-module ]; then
    DECISION=load
    WHY[$i]="the cGPU module is not loaded: its installer pod is recreated and loads it with POLICY $NEW_POLICY (no drain, no reboot)"
  else
    DECISION=reboot
    if [ -n "${INSTANCES[$i]}" ]; then
      WHY[$i]="shows $(state_text) : cordon, drain, reboot ECS instance ${INSTANCES[$i]} (${REGIONS[$i]:-its region}), wait, uncordon; it comes back with cGPU $(image_version "$DS_IMAGE") and POLICY $DS_POLICY ($DS_IMAGE)"
    else
      WHY[$i]="shows $(state_text) : cordon, drain, then you reboot it by hand (no ECS instance id); it comes back with cGPU $(image_version "$DS_IMAGE") and POLICY $DS_POLICY"
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
  local i="$1" node="${NODES[$1]}" region instance actor
  CURRENT_NODE="$node"
  step cordon
  check_ds
  read_node "$i"
  actor="$(other_actor "$i")"
  if [ -n "$actor" ]; then
    die "$node: $actor since it was decided: not cordoning it"
  fi
  budget_check "$i"
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

# The version the module runs (from STATE).
state_version() { sed -n 's/^version //p' <<< "$STATE"; }

wait_policy() {
  local node="$1" deadline=$((SECONDS + POLICY_TIMEOUT)) version
  while :; do
    if read_state "$node" "$DS_SELECTOR" && [ "$(judge)" = converted ]; then
      # The module as well as every GPU's policy: a node that came back with another cGPU
      # version than the plan's is not done (and nothing else goes down).
      version="$(state_version)"
      if [ -n "$PLAN_VERSION" ] && [ "$version" != "$PLAN_VERSION" ]; then
        fail replan "$node: came back with cGPU $version, the plan is for cGPU $PLAN_VERSION (every GPU shows policy $NEW_POLICY): the installer's image changed; plan again"
      fi
      return 0
    fi
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
  if [ "${#down[@]}" -gt 0 ]; then
    CURRENT_NODE="${names[*]}"
    step budget
    budget_check "$@"
  fi
  CURRENT_NODE="$title"
  step confirm
  say "== $title:"
  for i in "$@"; do say "   ${NODES[$i]}: ${WHY[$i]}"; done
  if ! confirm "Go ahead with these $# node(s)?"; then
    fail declined "declined: nothing in this batch was changed"
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
order_nodes
for i in "${ORDER[@]}"; do
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
    # The cluster's one policy (another installer may run another version).
    if [ "$(NEW_VERSION='' judge)" = converted ]; then
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
    say "Next: when the NotReady node(s) are Ready again, run this again: $RERUN --resume (only they are left)" >&2
  fi
  if [ "$SKIPPED_OTHER" -gt 0 ]; then
    say "Next: when the other actors above are done with their nodes, run this again: $RERUN --resume (only those nodes are left)" >&2
  fi
  if [ "${#NOT_DONE[@]}" -gt $((SKIPPED_CORDONED + SKIPPED_NOT_READY + SKIPPED_OTHER)) ]; then
    say "Next: the other GPU-sharing nodes above do not show the target: set their installer (cgpu-core-installer, or the node's labels) to POLICY $NEW_POLICY and restart them the same way; this run does not restart them" >&2
  fi
  exit 1
fi
say "All GPU-sharing nodes show the target ($TARGET_TEXT): done."
