package main

// The comparison, as tests/it/admission.rs makes it (`covered`, `check_verdict`, `pieces`, `agree`,
// `gitops_check`): for an installer DaemonSet the errors policy must deny exactly the covered
// rules check reports as errors and the warnings policy warn exactly the covered warnings, each
// message one of check's for that rule; for a HelmRelease or Application the gitops policy must
// deny exactly the covered errors check reports (a policy denial ⊆ check's where a source has a
// `values: |` string, which the policy cannot read); no expression may fail to evaluate; an
// object the API server refuses before admission must be one check reports an error on that the
// API server refuses. The offline evaluator (`check --admission-policy`) must give the API
// server's verdict and messages, evaluation errors included.

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

type diagnostic struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	File     string `json:"file"`
	Document int    `json:"document"`
	Path     string `json:"path"`
}

type checkReport struct {
	Diagnostics []diagnostic `json:"diagnostics"`
}

type ruleInfo struct {
	Name     string `json:"name"`
	Severity string `json:"severity"`
}

// piece is one finding of a diagnostic: check reports one finding per token, a second rule on
// the same token appended as `; also RULE: message`.
type piece struct{ rule, severity, message string }

func pieces(d diagnostic, severity map[string]string) []piece {
	parts := strings.Split(d.Message, "; also ")
	out := []piece{{d.Rule, d.Severity, parts[0]}}
	for _, p := range parts[1:] {
		name, msg, ok := strings.Cut(p, ": ")
		sev, known := severity[name]
		if !ok || !known {
			// Not a merge: the message itself says "; also ".
			out[len(out)-1].message += "; also " + p
			continue
		}
		// A merged rule has its catalogue severity, but installer-image-tag's digest-only
		// finding, which is a warning.
		if strings.Contains(msg, "is pinned by digest only") {
			sev = "warning"
		}
		out = append(out, piece{name, sev, msg})
	}
	return out
}

// policyKind is how the comparison reads a policy: which objects it judges and which of
// check's severities it stands for.
type policyKind struct {
	installer bool
	severity  string // "error" (its binding denies) or "warning" (it warns)
	rules     map[string]bool
}

type comparison struct {
	severity  map[string]string
	refusing  map[string]bool // rules whose findings the API server refuses before admission
	policies  map[string]policyKind
	installer struct{ errors, warnings map[string]bool }
	gitops    map[string]bool
}

const floatToHelm = "is a float to Helm, which holds every number as a float64"

func compareMain(args []string) (bool, error) {
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	verdictsFile := fs.String("verdicts", "", "eval's JSON lines")
	checkFile := fs.String("check", "", "`cgpu-lint check --format json` of the same files")
	offlineFile := fs.String("offline", "", "what `check --admission-policy` printed (stderr)")
	policyFile := fs.String("policy", "", "the policy file")
	bin := fs.String("cgpu-lint", "target/debug/cgpu-lint", "the cgpu-lint binary (rules, explain)")
	generated := fs.String("generated", "", "the folder of the generated objects (counted apart)")
	offlineOnly := fs.String("offline-only", "", "a file name prefix of objects compared with the offline evaluator only")
	_ = fs.Parse(args)

	c, err := newComparison(*bin, *policyFile)
	if err != nil {
		return false, err
	}
	verdicts, err := readVerdicts(*verdictsFile)
	if err != nil {
		return false, err
	}
	var report checkReport
	data, err := os.ReadFile(*checkFile)
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, &report); err != nil {
		return false, fmt.Errorf("%s: %v", *checkFile, err)
	}
	byDoc := map[string][]diagnostic{}
	for _, d := range report.Diagnostics {
		k := fmt.Sprintf("%s#%d", d.File, d.Document)
		byDoc[k] = append(byDoc[k], d)
	}
	objects := map[string]Object{}
	files := map[string]bool{}
	for _, v := range verdicts {
		if !files[v.File] {
			files[v.File] = true
			list, _ := readObjects(v.File)
			for _, o := range list {
				objects[o.ID()] = o
			}
		}
	}

	type tally struct{ compared, agreed, generated int }
	counts := map[string]*tally{"installer": {}, "gitops": {}}
	var problems []string
	notMatched := 0
	for _, v := range verdicts {
		var mine []diagnostic
		for _, d := range byDoc[fmt.Sprintf("%s#%d", v.File, v.Document)] {
			if d.Path == v.Pointer || strings.HasPrefix(d.Path, v.Pointer+"/") {
				mine = append(mine, d)
			}
		}
		isGenerated := *generated != "" && strings.HasPrefix(v.File, *generated)
		if *offlineOnly != "" && strings.HasPrefix(filepath.Base(v.File), *offlineOnly) {
			continue
		}
		group := ""
		for _, p := range v.Matched {
			if k, ok := c.policies[p]; ok {
				if k.installer {
					group = "installer"
				} else if group == "" {
					group = "gitops"
				}
			}
		}
		if group == "" {
			notMatched++
			continue
		}
		var why []string
		if group == "installer" {
			why = c.agreeInstaller(v, mine)
		} else {
			why = c.agreeGitops(v, mine, objects[v.ID])
		}
		counts[group].compared++
		if isGenerated {
			counts[group].generated++
		}
		if len(why) == 0 {
			counts[group].agreed++
		} else {
			problems = append(problems, fmt.Sprintf("%s policy, %s (%s %s):\n    %s\n    object: %s", group, v.ID, v.Kind, v.Name,
				strings.Join(why, "\n    "), compact(objects[v.ID].JSON)))
		}
	}
	ok := len(problems) == 0
	for _, p := range problems {
		fmt.Printf("DISAGREE %s\n", p)
	}
	for _, g := range []string{"installer", "gitops"} {
		t := counts[g]
		fmt.Printf("%s policies vs check: %d objects compared (%d of the repository, %d generated), %d agreed, %d disagreed\n",
			g, t.compared, t.compared-t.generated, t.generated, t.agreed, t.compared-t.agreed)
	}
	fmt.Printf("(%d objects of the inputs no policy matches were not compared)\n", notMatched)
	if *offlineFile != "" {
		compared, agreed, errors, offProblems := c.compareOffline(*offlineFile, verdicts)
		for _, p := range offProblems {
			fmt.Printf("OFFLINE %s\n", p)
		}
		fmt.Printf("offline evaluator (check --admission-policy) vs Kubernetes: %d objects compared (%d with evaluation errors), %d agreed, %d disagreed\n",
			compared, errors, agreed, compared-agreed)
		ok = ok && len(offProblems) == 0
	}
	return ok, nil
}

func compact(j []byte) string {
	if len(j) > 4000 {
		return string(j[:4000]) + "…"
	}
	return string(j)
}

func readVerdicts(path string) ([]Verdict, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Verdict
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 64<<20)
	for s.Scan() {
		var v Verdict
		if err := json.Unmarshal(s.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out, s.Err()
}

// newComparison reads the catalogue (`rules --format json`: severities; `explain`: the rules
// whose findings the API server refuses before admission) and the policies: which objects each
// judges (installer DaemonSets or HelmReleases/Applications), which of check's severities it
// stands for (its binding denies: errors; warns: warnings) and the rules it covers (the rule
// each validation's message starts with; `size-guard` is not a rule).
func newComparison(bin, policyFile string) (*comparison, error) {
	out, err := exec.Command(bin, "rules", "--format", "json").Output()
	if err != nil {
		return nil, fmt.Errorf("%s rules --format json: %v", bin, err)
	}
	var rules []ruleInfo
	if err := json.Unmarshal(out, &rules); err != nil {
		return nil, err
	}
	c := &comparison{severity: map[string]string{}, refusing: map[string]bool{}, policies: map[string]policyKind{}, gitops: map[string]bool{}}
	c.installer.errors = map[string]bool{}
	c.installer.warnings = map[string]bool{}
	for _, r := range rules {
		c.severity[r.Name] = r.Severity
		if r.Severity != "error" {
			continue
		}
		text, err := exec.Command(bin, "explain", r.Name).Output()
		if err != nil {
			return nil, fmt.Errorf("%s explain %s: %v", bin, r.Name, err)
		}
		if strings.Contains(string(text), "the API server itself refuses") {
			c.refusing[r.Name] = true
		}
	}
	set, err := loadPolicies([]string{policyFile})
	if err != nil {
		return nil, err
	}
	for _, p := range set.policies {
		k := policyKind{rules: map[string]bool{}}
		if mc := p.Spec.MatchConstraints; mc != nil {
			for _, r := range mc.ResourceRules {
				for _, res := range r.Resources {
					if res == "daemonsets" {
						k.installer = true
					}
				}
			}
		}
		for _, b := range set.bindings {
			if b.Spec.PolicyName != p.Name {
				continue
			}
			for _, a := range b.Spec.ValidationActions {
				if a == "Deny" {
					k.severity = "error"
				} else if k.severity == "" {
					k.severity = "warning"
				}
			}
		}
		for _, v := range p.Spec.Validations {
			if m := rulePrefix.FindStringSubmatch(v.Message); m != nil && m[1] != "size-guard" {
				k.rules[m[1]] = true
			}
		}
		c.policies[p.Name] = k
		for r := range k.rules {
			switch {
			case !k.installer:
				c.gitops[r] = true
			case k.severity == "error":
				c.installer.errors[r] = true
			default:
				c.installer.warnings[r] = true
			}
		}
	}
	return c, nil
}

type ruleMessage struct{ rule, message string }

func setOf(m map[string]bool) string {
	var l []string
	for k := range m {
		l = append(l, k)
	}
	sort.Strings(l)
	return "{" + strings.Join(l, ", ") + "}"
}

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func (c *comparison) agreeInstaller(v Verdict, findings []diagnostic) []string {
	if v.Refused != "" {
		for _, d := range findings {
			if d.Severity == "error" && c.refusing[d.Rule] {
				return nil
			}
		}
		return []string{fmt.Sprintf("refused before admission (%s) but check reports no error the API server refuses", v.Refused)}
	}
	var why []string
	evaluated := 0
	for _, p := range v.Evaluated {
		if c.policies[p].installer {
			evaluated++
		}
	}
	if evaluated != 2 {
		why = append(why, fmt.Sprintf("evaluated by %v, not both installer policies", v.Evaluated))
	}
	for _, e := range v.Errors {
		why = append(why, "evaluation error: "+e)
	}
	cErrors, cWarnings := map[string]bool{}, map[string]bool{}
	var cMessages []ruleMessage
	for _, d := range findings {
		for _, p := range pieces(d, c.severity) {
			switch {
			case p.severity == "error" && c.installer.errors[p.rule]:
				cErrors[p.rule] = true
			case p.severity == "warning" && c.installer.warnings[p.rule]:
				cWarnings[p.rule] = true
			default:
				continue
			}
			cMessages = append(cMessages, ruleMessage{p.rule, p.message})
		}
	}
	pErrors, pWarnings := map[string]bool{}, map[string]bool{}
	var pMessages []ruleMessage
	for _, d := range v.Decisions {
		k, ok := c.policies[d.Policy]
		if !ok || !k.installer || d.Error {
			continue
		}
		if k.severity == "error" {
			pErrors[d.Rule] = true
		} else {
			pWarnings[d.Rule] = true
		}
		pMessages = append(pMessages, ruleMessage{d.Rule, strings.TrimPrefix(d.Message, d.Rule+": ")})
	}
	if !equalSets(cErrors, pErrors) {
		why = append(why, fmt.Sprintf("errors: check %s, the policy denies %s", setOf(cErrors), setOf(pErrors)))
	}
	if !equalSets(cWarnings, pWarnings) {
		why = append(why, fmt.Sprintf("warnings: check %s, the policy warns %s", setOf(cWarnings), setOf(pWarnings)))
	}
	why = append(why, messagesAgree(pMessages, cMessages, false)...)
	return why
}

// messagesAgree: each policy message is one of check's for its rule.
func messagesAgree(policy, check []ruleMessage, floats bool) []string {
	var why []string
	for _, pm := range policy {
		found := false
		var theirs []string
		for _, cm := range check {
			if cm.rule != pm.rule {
				continue
			}
			theirs = append(theirs, strconv.Quote(cm.message))
			// A policy of 1e15 or more: check names it as written and as Go prints the float;
			// CEL sees neither.
			if cm.message == pm.message || (floats && strings.Contains(pm.message, floatToHelm) && strings.Contains(cm.message, floatToHelm)) {
				found = true
			}
		}
		if !found {
			why = append(why, fmt.Sprintf("%s: the policy says %q, check says [%s]", pm.rule, pm.message, strings.Join(theirs, ", ")))
		}
	}
	return why
}

// valuesString: a source of the Application has a `values: |` string.
func valuesString(o Object) bool {
	var m map[string]interface{}
	if json.Unmarshal(o.JSON, &m) != nil {
		return false
	}
	spec, _ := m["spec"].(map[string]interface{})
	var sources []interface{}
	if s, ok := spec["source"]; ok {
		sources = append(sources, s)
	}
	if l, ok := spec["sources"].([]interface{}); ok {
		sources = append(sources, l...)
	}
	for _, s := range sources {
		sm, _ := s.(map[string]interface{})
		helm, _ := sm["helm"].(map[string]interface{})
		if _, ok := helm["values"].(string); ok {
			return true
		}
	}
	return false
}

var parameterLabel = regexp.MustCompile("^(.*?)`\\): (.*)$")

func (c *comparison) agreeGitops(v Verdict, findings []diagnostic, o Object) []string {
	var why []string
	if v.Refused != "" {
		return []string{"refused before admission: " + v.Refused}
	}
	for _, e := range v.Errors {
		why = append(why, "evaluation error: "+e)
	}
	cRules := map[string]bool{}
	var cMessages []ruleMessage
	for _, d := range findings {
		for _, p := range pieces(d, c.severity) {
			if p.severity != "error" || !c.gitops[p.rule] {
				continue
			}
			// The label: the object, then the parameter a value came from.
			msg := p.message
			if m := parameterLabel.FindStringSubmatch(msg); m != nil && strings.Contains(m[1], " (parameter `") {
				msg = m[2]
			} else if _, rest, ok := strings.Cut(msg, "`: "); ok {
				msg = rest
			}
			cRules[p.rule] = true
			cMessages = append(cMessages, ruleMessage{p.rule, msg})
		}
	}
	pRules := map[string]bool{}
	var pMessages []ruleMessage
	for _, d := range v.Decisions {
		k, ok := c.policies[d.Policy]
		if !ok || k.installer || d.Error {
			continue
		}
		pRules[d.Rule] = true
		pMessages = append(pMessages, ruleMessage{d.Rule, strings.TrimPrefix(d.Message, d.Rule+": ")})
	}
	if valuesString(o) {
		// A `values: |` string is not covered: the policy never denies what check does not
		// report there.
		for r := range pRules {
			if !cRules[r] {
				why = append(why, fmt.Sprintf("a source has a values string: the policy denies %s, which check does not report", r))
			}
		}
		return why
	}
	if !equalSets(cRules, pRules) {
		why = append(why, fmt.Sprintf("errors: check %s, the policy denies %s", setOf(cRules), setOf(pRules)))
	}
	why = append(why, messagesAgree(pMessages, cMessages, true)...)
	return why
}

var (
	offlineHeader  = regexp.MustCompile(`^(.*?):(\d+):(\d+): (\S+) (.*?) (in \S+|\(no namespace: as in \S+\))(?: \((?:CREATE|UPDATE)\))?: (denied|admitted)$`)
	offlineRefused = regexp.MustCompile(`^(.*?):(\d+):(\d+): (\S+) (.*?): refused by the API server before admission \((.*)\)$`)
)

type offlineBlock struct {
	verdict string
	lines   []string
}

// compareOffline holds the offline evaluator's printed verdicts (one block per object a
// binding matched: `FILE:LINE:COL: KIND NAME in NS: denied`, then `  ACTIONS POLICY: MESSAGE`
// lines) to the API server's, object by object (file, line of metadata.name, kind, name).
func (c *comparison) compareOffline(path string, verdicts []Verdict) (int, int, int, []string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, []string{err.Error()}
	}
	blocks := map[string]*offlineBlock{}
	var cur *offlineBlock
	for _, line := range strings.Split(string(data), "\n") {
		if m := offlineHeader.FindStringSubmatch(line); m != nil {
			cur = &offlineBlock{verdict: m[7]}
			blocks[fmt.Sprintf("%s:%s %s %s", m[1], m[2], m[4], m[5])] = cur
			continue
		}
		if m := offlineRefused.FindStringSubmatch(line); m != nil {
			cur = &offlineBlock{verdict: "refused"}
			blocks[fmt.Sprintf("%s:%s %s %s", m[1], m[2], m[4], m[5])] = cur
			continue
		}
		if strings.HasPrefix(line, "  ") && cur != nil {
			cur.lines = append(cur.lines, strings.TrimPrefix(line, "  "))
			continue
		}
		cur = nil
	}
	compared, agreed, errors := 0, 0, 0
	var problems []string
	for _, v := range verdicts {
		key := fmt.Sprintf("%s:%d %s %s", v.File, v.Line, v.Kind, v.Name)
		if len(v.Errors) > 0 {
			errors++
		}
		b := blocks[key]
		// The offline evaluator prints an object a policy evaluates (its matchConditions
		// hold, or fail); the API server's matchConditions leave the others out silently.
		if len(v.Evaluated) == 0 && len(v.Decisions) == 0 && v.Refused == "" && b == nil {
			continue
		}
		compared++
		want := offlineLines(v)
		var why []string
		switch {
		case b == nil:
			why = append(why, "the offline evaluator did not evaluate it")
		case v.Refused != "":
			if b.verdict != "refused" {
				why = append(why, fmt.Sprintf("the API server refuses it (%s), the offline evaluator: %s", v.Refused, b.verdict))
			}
		default:
			verdict := "admitted"
			if !v.Allowed {
				verdict = "denied"
			}
			if b.verdict != verdict {
				why = append(why, fmt.Sprintf("Kubernetes: %s, the offline evaluator: %s", verdict, b.verdict))
			}
			got := append([]string(nil), b.lines...)
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				why = append(why, "Kubernetes:\n      "+strings.Join(want, "\n      ")+"\n    the offline evaluator:\n      "+strings.Join(got, "\n      "))
			}
		}
		if len(why) == 0 {
			agreed++
		} else {
			problems = append(problems, fmt.Sprintf("%s (%s %s, line %d):\n    %s", v.ID, v.Kind, v.Name, v.Line, strings.Join(why, "\n    ")))
		}
	}
	return compared, agreed, errors, problems
}

// offlineLines are the API server's decisions as the offline evaluator prints them, sorted.
func offlineLines(v Verdict) []string {
	type key struct{ policy, message string }
	actions := map[key][]string{}
	var order []key
	var out []string
	for _, d := range v.Decisions {
		if d.Action == "Ignore" {
			out = append(out, fmt.Sprintf("ignored (failurePolicy: Ignore) %s: %s", d.Policy, d.Message))
			continue
		}
		k := key{d.Policy, d.Message}
		if _, ok := actions[k]; !ok {
			order = append(order, k)
		}
		actions[k] = append(actions[k], d.Action)
	}
	for _, k := range order {
		out = append(out, fmt.Sprintf("%s %s: %s", strings.Join(actions[k], ","), k.policy, k.message))
	}
	sort.Strings(out)
	return out
}
