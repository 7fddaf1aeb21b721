// The admission oracle: Kubernetes' own ValidatingAdmissionPolicy code (k8s.io/apiserver,
// built from Debian's golang-k8s-apiserver-dev by scripts/admission-oracle) decides what the
// policies cgpu-lint generates do to each object, and that is compared with what
// `cgpu-lint check` (and the offline evaluator of `check --admission-policy`) says.
//
//	admission-oracle eval -policy FILE [-policy FILE …] [-namespace NS] FILE…
//	    one JSON line per object of the files: the API server's verdict
//	admission-oracle generate -dir DIR [-seed N] [-daemonsets N] [-applications N] [-gitops N]
//	    random objects, one file each (the generators of tests/it/admission.rs, and Argo CD
//	    Applications with helm.parameters beside valuesObject)
//	admission-oracle compare -verdicts FILE -check FILE -cgpu-lint BIN [-offline FILE]
//	    the verdicts against check's JSON report (and the offline evaluator's text), object by
//	    object; counts, every disagreement, exit 1 on any
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "eval":
		err = evalMain(os.Args[2:])
	case "generate":
		err = generateMain(os.Args[2:])
	case "compare":
		var ok bool
		ok, err = compareMain(os.Args[2:])
		if err == nil && !ok {
			os.Exit(1)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "admission-oracle:", err)
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: admission-oracle eval|generate|compare … (see scripts/admission-oracle --help)")
	os.Exit(2)
}

func evalMain(args []string) error {
	fs := flag.NewFlagSet("eval", flag.ExitOnError)
	var policies listFlag
	fs.Var(&policies, "policy", "a policy file (repeatable)")
	ns := fs.String("namespace", "kube-system", "the namespace of an object that names none (check --admission-policy's)")
	filesFrom := fs.String("files-from", "", "a file naming the input files, one a line")
	_ = fs.Parse(args)
	files := fs.Args()
	if *filesFrom != "" {
		f, err := os.Open(*filesFrom)
		if err != nil {
			return err
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			if t := strings.TrimSpace(s.Text()); t != "" {
				files = append(files, t)
			}
		}
		f.Close()
	}
	set, err := loadPolicies(policies)
	if err != nil {
		return err
	}
	a := newAdmitter(set)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for _, f := range files {
		objects, err := readObjects(f)
		if err != nil {
			// Not YAML kubectl reads: no object of it reaches the API server.
			fmt.Fprintf(os.Stderr, "admission-oracle: skipped %v\n", err)
			continue
		}
		for i := range objects {
			if err := writeJSONLine(out, a.admit(&objects[i], *ns)); err != nil {
				return err
			}
		}
	}
	return nil
}
