package main

// Random objects, one JSON file each (JSON is YAML: check and kubectl read it alike). The
// DaemonSets and the HelmReleases/Applications are tests/it/admission.rs's generators, call for call
// (the same xorshift and the same seeds give the same objects); the Applications with parameters
// always carry helm.parameters (name, value, forceString) beside a valuesObject.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s ^= r.s >> 12
	r.s ^= r.s << 25
	r.s ^= r.s >> 27
	return r.s * 0x2545f4914f6cdd1d
}
func (r *rng) below(n int) int         { return int(r.next() % uint64(n)) }
func (r *rng) chance(percent int) bool { return r.next()%100 < uint64(percent) }
func pick[T any](r *rng, items []T) T  { return items[r.below(len(items))] }

type obj = map[string]interface{}

var policyValues = []string{"0", "1", "2", "3", "4", "5", "6", "7", "9", "01", "00", " 1", "1 ", "-1", "1.0", "10", "+1", "preemptive", "fair-share", "١", "\u20032", "true"}

var hosts = []string{"", "registry-vpc.cn-hangzhou.aliyuncs.com", "registry.cn-beijing.aliyuncs.com",
	"registry-cn-shanghai-vpc.ack.aliyuncs.com", "registry-ap-southeast-1.ack.aliyuncs.com",
	"registry-vpc.cn-shanghai-finance-1.aliyuncs.com", "registry-vpc.cn-hangzhou-pub.aliyuncs.com",
	"registry-vpc.xx-newregion-9.aliyuncs.com", "registry-vpc.cn_hangzhou.aliyuncs.com",
	"registry-vpc.CN-hangzhou.aliyuncs.com", "registry.hangzhou.aliyuncs.com", "registry-vpc.a.b.aliyuncs.com",
	"registry..aliyuncs.com", "registry-.ack.aliyuncs.com", "registry-vpc.ack.aliyuncs.com",
	"registry.ack.aliyuncs.com", "registry--vpc.ack.aliyuncs.com", "registry-vpc.aliyuncs.com",
	"cr.cn-hangzhou.aliyuncs.com", "docker.io", "localhost", "localhost:5000", "my-mirror.example.com:443",
	"10.0.0.1:5000"}

var paths = []string{"acs/cgpu-installer", "cgpu-installer", "a/b/cgpu-installer"}

var tags = []string{"", "latest", " ", "v1.5.10-2b9e7d4-aliyun", "v1.5.10", "1.5.10", "v1.0.6-abc1234-aliyun",
	"1.0.6", "v1.0.5-4b4d9a1-aliyun", "1.0.5", "v1.0.3-2a1c3e9-aliyun", "0.9.9", "v1.5.7-0d41c2a-aliyun",
	"1.5.7", "1.5.8", "v1.4.99", "v1.0.7-fin", "v1.5.20-3c9d1e7a-fin", "v1.5.3-8d3fc1b-aliyun-fin",
	"v1.5.3-xyz1234-aliyun", "v1.5.3-8d3-aliyun", "vv1.5.3", "V1.5.3", "01.5.3", "1.05.3", "1.5", "1.5.3.4",
	"v1.5.3_aliyun", "1.5.3-", "1.5.3-a_b", "2.0.0", "v10.0.0-abcdef0-aliyun", "1.0.6:x",
	"9999999999999999999.0.0"}

func genTag(r *rng) string {
	if r.chance(60) {
		return pick(r, tags)
	}
	v := ""
	if r.chance(50) {
		v = "v"
	}
	a := pick(r, []int{0, 1, 1, 1, 2})
	b := pick(r, []int{0, 0, 4, 5, 5, 6})
	c := pick(r, []int{0, 3, 5, 6, 7, 8, 10})
	suffix := pick(r, []string{"", "-8d3fc1b-aliyun", "-fin", "-abc", "-0123456789abcdef-fin", "-DEADBEEF-aliyun"})
	return fmt.Sprintf("%s%d.%d.%d%s", v, a, b, c, suffix)
}

func genImage(r *rng) (string, bool) {
	if r.chance(3) {
		return "", false
	}
	host := pick(r, hosts)
	s := pick(r, paths)
	if host != "" {
		s = host + "/" + s
	}
	if r.chance(85) {
		s += ":" + genTag(r)
	}
	if r.chance(15) {
		s += "@sha256:2b9e7d4f2b9e7d4f2b9e7d4f2b9e7d4f2b9e7d4f2b9e7d4f2b9e7d4f2b9e7d4f"
	}
	return s, true
}

func envEntry(r *rng) obj {
	switch n := r.below(10); {
	case n <= 5:
		return obj{"name": "POLICY", "value": pick(r, policyValues)}
	case n == 6:
		return obj{"name": "POLICY"}
	case n == 7:
		return obj{"name": "POLICY", "valueFrom": obj{"configMapKeyRef": obj{"name": "cgpu", "key": "policy"}}}
	case n == 8:
		return obj{"name": pick(r, []string{"ALIYUN_COM_GPU_MEM_IDX", "ALIYUN_COM_GPU_SCHD_WEIGHT", "CGPU_DISABLE"}), "value": "1"}
	default:
		return obj{"name": pick(r, []string{"NODE_NAME", "policy", "POLICY_FILE", "LOG_LEVEL"}), "value": "x"}
	}
}

func container(r *rng, name string) obj {
	c := obj{"name": name}
	if i, ok := genImage(r); ok {
		c["image"] = i
	}
	if !r.chance(15) {
		n := pick(r, []int{0, 1, 1, 1, 2, 3})
		env := []interface{}{}
		for k := 0; k < n; k++ {
			env = append(env, envEntry(r))
		}
		if len(env) > 0 || r.chance(50) {
			c["env"] = env
		}
	}
	return c
}

func daemonset(r *rng) obj {
	name := pick(r, []string{"cgpu-installer", "cgpu-installer", "cgpu-core-installer"})
	mainName := "installer"
	if r.chance(80) {
		mainName = name
	}
	containers := []interface{}{}
	if r.chance(20) {
		containers = append(containers, container(r, "sidecar"))
	}
	containers = append(containers, container(r, mainName))
	if r.chance(20) {
		containers = append(containers, container(r, "exporter"))
	}
	spec := obj{"containers": containers}
	if r.chance(20) {
		n := "init"
		if r.chance(10) {
			n = name
		}
		spec["initContainers"] = []interface{}{container(r, n)}
	}
	switch r.below(8) {
	case 0:
	case 1:
		spec["nodeSelector"] = obj{}
	case 2:
		spec["nodeSelector"] = obj{"cgpu": "true"}
	case 3:
		spec["nodeSelector"] = obj{"cgpu": pick(r, []string{"false", "True"})}
	case 4:
		spec["nodeSelector"] = obj{"ack.node.gpu.schedule": pick(r, []string{"share", "core_mem", "default", "cgpu"})}
	case 5:
		spec["nodeSelector"] = obj{"ack.node.gpu.schedule": "cgpu", "kubernetes.io/os": "linux"}
	default:
		v := "core_mem"
		if name == "cgpu-installer" {
			v = "cgpu"
		}
		spec["nodeSelector"] = obj{"ack.node.gpu.schedule": v}
	}
	if r.chance(50) {
		spec["priorityClassName"] = "system-node-critical"
	}
	return obj{
		"apiVersion": "apps/v1",
		"kind":       "DaemonSet",
		"metadata":   obj{"name": name, "namespace": "kube-system"},
		"spec": obj{
			"selector": obj{"matchLabels": obj{"name": name}},
			"template": obj{"metadata": obj{"labels": obj{"name": name}}, "spec": spec},
		},
	}
}

// num is a JSON number written as the Rust generator's serde_json writes it (`2.0` stays
// `2.0`).
func num(s string) json.Number { return json.Number(s) }

func gitopsValue(r *rng, key string) interface{} {
	switch key {
	case "enabled", "checkRegions":
		if r.below(3) == 0 {
			return r.chance(50)
		}
		return pick(r, []string{"true", "false", "False", "no", "off", "n", "yes", "on", " false", "", "x"})
	case "policy":
		switch r.below(4) {
		case 0:
			return num(pick(r, []string{"-1", "0", "1", "2", "3", "5", "6", "7", "100", "-100"}))
		case 1:
			return pick(r, []string{"0", "3", "5", "6", "7", "12", "02", "00", "-1", " 3", "3 ", "fair", "Fair-Share",
				"preemptive", "native", "weight", "x", "", "1.5", "9999999999999999999"})
		case 2:
			return num(pick(r, []string{"0.0", "2.0", "5.0", "7.0", "-1.0", "2.5", "0.5", "-3.5", "6.0"}))
		default:
			return r.chance(50)
		}
	case "tag", "financeCloudImageTag":
		if r.chance(5) {
			return num("1.5")
		}
		return genTag(r)
	case "image":
		return pick(r, []string{"acs/cgpu-installer", "mirror/cgpu-installer"})
	default:
		return pick(r, []string{"IfNotPresent", "Always", "always"})
	}
}

func gitopsBlock(r *rng) obj {
	m := obj{}
	for _, key := range []string{"enabled", "policy", "tag", "financeCloudImageTag", "checkRegions", "image", "imagePullPolicy"} {
		p := 25
		if key == "policy" || key == "tag" {
			p = 70
		}
		if r.chance(p) {
			m[key] = gitopsValue(r, key)
		}
	}
	return obj{"cgpu": m}
}

func chartRef(r *rng, path bool, names *bool) string {
	good := []string{"ack-ai-installer"}
	if path {
		good = []string{"ack-ai-installer", "charts/ack-ai-installer", "charts/ack-ai-installer/"}
	}
	if r.chance(80) {
		*names = true
		return pick(r, good)
	}
	return pick(r, []string{"other", "ack-ai-installer-x", "charts/other", "my-ack-ai-installer"})
}

func parameter(r *rng) obj {
	name := pick(r, []string{"cgpu.policy", "cgpu.policy", "cgpu.tag", "cgpu.enabled", "cgpu.checkRegions",
		"cgpu.financeCloudImageTag", "cgpu.image", "other.policy"})
	var value string
	switch r.below(3) {
	case 0:
		value = pick(r, []string{"7", "3", "0", "00", "07", "-1", "+5", "+7", "-0", "true", "False", "NULL", "null",
			"fair", "", "1.5", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
			"+0000000000000000000003"})
	case 1:
		value = genTag(r)
	default:
		value = pick(r, []string{"1.0.5", "v1.5.10-2b9e7d4-aliyun", "latest", "2"})
	}
	p := obj{"name": name}
	if r.chance(95) {
		p["value"] = value
	}
	if r.chance(25) {
		p["forceString"] = r.chance(70)
	}
	return p
}

func jsonText(v interface{}) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return b.String()
}

// gitopsObject is tests/it/admission.rs's gitops_object: a HelmRelease or an Application.
func gitopsObject(r *rng) obj {
	names := false
	if r.chance(50) {
		var chart obj
		if r.chance(80) {
			chart = obj{"spec": obj{"chart": chartRef(r, true, &names), "sourceRef": obj{"kind": "HelmRepository", "name": "aliyun"}}}
		}
		spec := obj{"interval": "10m"}
		if chart == nil {
			spec["chartRef"] = obj{"kind": "OCIRepository", "name": chartRef(r, false, &names)}
		} else {
			spec["chart"] = chart
		}
		if r.chance(90) {
			spec["values"] = gitopsBlock(r)
		}
		version := pick(r, []string{"v2", "v2", "v2beta2", "v2beta1"})
		return obj{
			"apiVersion": "helm.toolkit.fluxcd.io/" + version,
			"kind":       "HelmRelease",
			"metadata":   obj{"name": "gpu", "namespace": "flux-system"},
			"spec":       spec,
		}
	}
	source := func(r *rng) obj {
		s := obj{"repoURL": "https://example.com/charts", "targetRevision": "1.0.0"}
		if r.chance(80) {
			s["chart"] = chartRef(r, false, &names)
		} else {
			s["path"] = chartRef(r, true, &names)
		}
		block := gitopsBlock(r)
		hasValues := false
		switch r.below(10) {
		case 0:
		case 1:
			s["helm"] = obj{"values": jsonText(block)}
			hasValues = true
		default:
			s["helm"] = obj{"valuesObject": block}
		}
		if r.chance(40) && !hasValues {
			if _, ok := s["helm"]; !ok {
				s["helm"] = obj{}
			}
			n := 1 + r.below(4)
			params := []interface{}{}
			for k := 0; k < n; k++ {
				params = append(params, parameter(r))
			}
			s["helm"].(obj)["parameters"] = params
		}
		return s
	}
	return application(r, source)
}

func application(r *rng, source func(*rng) obj) obj {
	spec := obj{"project": "default", "destination": obj{"namespace": "kube-system", "server": "https://kubernetes.default.svc"}}
	if r.chance(70) {
		spec["source"] = source(r)
	} else {
		n := 1 + r.below(2)
		sources := []interface{}{}
		for k := 0; k < n; k++ {
			sources = append(sources, source(r))
		}
		spec["sources"] = sources
	}
	return obj{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata":   obj{"name": "gpu", "namespace": "argocd"},
		"spec":       spec,
	}
}

// parametersApplication is an Application of the chart whose every source has helm.parameters
// (one to four, the generator's) beside a valuesObject (or, one time in ten, none).
func parametersApplication(r *rng) obj {
	names := false
	return application(r, func(r *rng) obj {
		s := obj{"repoURL": "https://example.com/charts", "targetRevision": "1.0.0"}
		if r.chance(90) {
			s["chart"] = "ack-ai-installer"
		} else {
			s["path"] = chartRef(r, true, &names)
		}
		helm := obj{}
		if r.chance(90) {
			helm["valuesObject"] = gitopsBlock(r)
		}
		n := 1 + r.below(4)
		params := []interface{}{}
		for k := 0; k < n; k++ {
			params = append(params, parameter(r))
		}
		helm["parameters"] = params
		s["helm"] = helm
		return s
	})
}

// edge is a generated DaemonSet broken where the installer policies' variables read it (no
// container name, no containers, none at all, no env name, no pod spec, no template, no
// image): the API server's core validation refuses most of these before admission, so they are
// compared with the offline evaluator only, whose variables and evaluation errors they reach.
func edge(r *rng) obj {
	o := daemonset(r)
	tmpl := o["spec"].(obj)["template"].(obj)
	spec := tmpl["spec"].(obj)
	containers := spec["containers"].([]interface{})
	each := func(f func(c obj)) {
		for _, c := range containers {
			f(c.(obj))
		}
		if ic, ok := spec["initContainers"].([]interface{}); ok {
			for _, c := range ic {
				f(c.(obj))
			}
		}
	}
	switch r.below(7) {
	case 0:
		each(func(c obj) { delete(c, "name") })
	case 1:
		delete(spec, "containers")
	case 2:
		spec["containers"] = []interface{}{}
	case 3:
		each(func(c obj) {
			if env, ok := c["env"].([]interface{}); ok {
				for _, e := range env {
					delete(e.(obj), "name")
				}
			}
		})
	case 4:
		delete(tmpl, "spec")
	case 5:
		delete(o["spec"].(obj), "template")
	default:
		each(func(c obj) { delete(c, "image") })
		spec["initContainers"] = []interface{}{}
	}
	return o
}

func generateMain(args []string) error {
	fs := flag.NewFlagSet("generate", flag.ExitOnError)
	dir := fs.String("dir", "", "the folder to write the objects to (one file each)")
	seed := fs.Uint64("seed", 24, "the seed (tests/it/admission.rs's ADMISSION_SEED)")
	daemonsets := fs.Int("daemonsets", 3000, "generated DaemonSets")
	gitops := fs.Int("gitops", 1500, "generated HelmReleases and Applications (tests/it/admission.rs's)")
	applications := fs.Int("applications", 1500, "generated Applications with helm.parameters beside valuesObject")
	edges := fs.Int("edges", 300, "generated DaemonSets broken where the policies' variables read them")
	_ = fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("generate: -dir is required")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	write := func(name string, o obj) error {
		return os.WriteFile(filepath.Join(*dir, name), []byte(jsonText(o)), 0o644)
	}
	r := &rng{(*seed * 0x9e3779b97f4a7c15) | 1}
	for i := 0; i < *daemonsets; i++ {
		if err := write(fmt.Sprintf("daemonset-%05d.yaml", i), daemonset(r)); err != nil {
			return err
		}
	}
	r = &rng{((*seed * 0x9e3779b97f4a7c15) ^ 0x005eed0f6170) | 1}
	for i := 0; i < *gitops; i++ {
		if err := write(fmt.Sprintf("gitops-%05d.yaml", i), gitopsObject(r)); err != nil {
			return err
		}
	}
	r = &rng{((*seed * 0x9e3779b97f4a7c15) ^ 0x00a7a9a7e7e5) | 1}
	for i := 0; i < *applications; i++ {
		if err := write(fmt.Sprintf("application-%05d.yaml", i), parametersApplication(r)); err != nil {
			return err
		}
	}
	r = &rng{((*seed * 0x9e3779b97f4a7c15) ^ 0x00ed9e5ed9e5) | 1}
	for i := 0; i < *edges; i++ {
		if err := write(fmt.Sprintf("edge-%05d.yaml", i), edge(r)); err != nil {
			return err
		}
	}
	return nil
}
