package main

// Admission as the API server does it: the policies and bindings of the policy files, compiled by
// the API server's own compilePolicy (validating.CompilePolicy, laid in by the build's overlay),
// matched and dispatched by its own dispatcher (matchConstraints, the binding's matchResources,
// namespaceSelector, matchConditions, validationActions, failurePolicy), each object decoded as
// the API server decodes a request body.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	admv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

// policySet is what the policy files hold: the policies, their bindings (both defaulted as the
// API server stores them) and the other objects (where a paramRef finds its params).
type policySet struct {
	policies []*admv1.ValidatingAdmissionPolicy
	bindings []*admv1.ValidatingAdmissionPolicyBinding
	params   cache.Indexer
	compiled map[string]validating.Validator
}

// loadPolicies reads every ValidatingAdmissionPolicy and binding (admissionregistration.k8s.io
// v1 or v1beta1, whose fields are v1's) of the files, strictly: a field the API server does not
// know is an error here, as kubectl's strict field validation makes it one.
func loadPolicies(files []string) (*policySet, error) {
	set := &policySet{
		params:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		compiled: map[string]validating.Validator{},
	}
	for _, f := range files {
		objects, err := readObjects(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objects {
			group := strings.SplitN(o.APIVersion, "/", 2)[0]
			switch {
			case group == "admissionregistration.k8s.io" && o.Kind == "ValidatingAdmissionPolicy":
				p := &admv1.ValidatingAdmissionPolicy{}
				if err := yaml.UnmarshalStrict(o.JSON, p); err != nil {
					return nil, fmt.Errorf("%s: policy %s: %v", o.ID(), o.Name, err)
				}
				defaultPolicy(p)
				set.policies = append(set.policies, p)
			case group == "admissionregistration.k8s.io" && o.Kind == "ValidatingAdmissionPolicyBinding":
				b := &admv1.ValidatingAdmissionPolicyBinding{}
				if err := yaml.UnmarshalStrict(o.JSON, b); err != nil {
					return nil, fmt.Errorf("%s: binding %s: %v", o.ID(), o.Name, err)
				}
				defaultBinding(b)
				set.bindings = append(set.bindings, b)
			default:
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON(o.JSON); err == nil {
					if u.GetNamespace() == "" {
						u.SetNamespace("default")
					}
					_ = set.params.Add(u)
				}
			}
		}
	}
	if len(set.policies) == 0 {
		return nil, fmt.Errorf("no ValidatingAdmissionPolicy in %s", strings.Join(files, ", "))
	}
	for _, p := range set.policies {
		set.compiled[p.Name] = validating.CompilePolicy(p)
	}
	return set, nil
}

// The API server's defaults for the fields the policies may leave out
// (pkg/apis/admissionregistration/v1/defaults.go of Kubernetes, which is not in the apiserver
// package): failurePolicy Fail, matchPolicy Equivalent, empty namespace and object selectors,
// a rule's scope `*`, a paramRef's parameterNotFoundAction Deny.
func defaultPolicy(p *admv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		f := admv1.Fail
		p.Spec.FailurePolicy = &f
	}
	if p.Spec.MatchConstraints != nil {
		defaultMatch(p.Spec.MatchConstraints)
	}
}

func defaultBinding(b *admv1.ValidatingAdmissionPolicyBinding) {
	if b.Spec.MatchResources != nil {
		defaultMatch(b.Spec.MatchResources)
	}
	if b.Spec.ParamRef != nil && b.Spec.ParamRef.ParameterNotFoundAction == nil {
		a := admv1.DenyAction
		b.Spec.ParamRef.ParameterNotFoundAction = &a
	}
}

func defaultMatch(m *admv1.MatchResources) {
	if m.MatchPolicy == nil {
		e := admv1.Equivalent
		m.MatchPolicy = &e
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				s := admv1.AllScopes
				rules[i].Scope = &s
			}
		}
	}
}

// Decision is one validation that did not admit: a failure or an evaluation error.
type Decision struct {
	Policy  string `json:"policy"`
	Binding string `json:"binding"`
	// Deny, Warn or Audit (the binding's validationActions), or Ignore: an evaluation error the
	// policy's failurePolicy Ignore drops.
	Action string `json:"action"`
	// The rule id the message starts with (`installer-policy-invalid: …`), when it does.
	Rule       string `json:"rule,omitempty"`
	Message    string `json:"message"`
	Error      bool   `json:"error"`
	Validation int    `json:"validation"`
}

// Verdict is the API server's answer on one object.
type Verdict struct {
	ID         string `json:"id"`
	File       string `json:"file"`
	Document   int    `json:"document"`
	Pointer    string `json:"pointer"`
	Line       int    `json:"line,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	// Why the API server refuses the request body before any admission policy runs.
	Refused string `json:"refused,omitempty"`
	// What kubectl's default strict field validation would refuse in an object the API server
	// otherwise takes (Helm, and the API server's default, only warn).
	Strict string `json:"strict,omitempty"`
	// Policies whose matchConstraints (and a binding's matchResources) select the object.
	Matched []string `json:"matched"`
	// Of those, the policies whose matchConditions hold (or fail to evaluate).
	Evaluated []string   `json:"evaluated"`
	Allowed   bool       `json:"allowed"`
	Denial    string     `json:"denial,omitempty"`
	Warnings  []string   `json:"warnings,omitempty"`
	Decisions []Decision `json:"decisions"`
	// Evaluation errors, `policy: message`.
	Errors []string `json:"errors"`
}

// recorder is the validator the dispatcher calls, keeping every result it returns: the
// dispatcher itself reports only the first denial.
type recorder struct {
	inner   validating.Validator
	results []validating.ValidateResult
}

func (r *recorder) Validate(ctx context.Context, gvr schema.GroupVersionResource, va *admission.VersionedAttributes, params runtime.Object, ns *corev1.Namespace, budget int64, authz authorizer.Authorizer) validating.ValidateResult {
	res := r.inner.Validate(ctx, gvr, va, params, ns, budget, authz)
	r.results = append(r.results, res)
	return res
}

func (r *recorder) CompileError() error { return r.inner.CompileError() }

type warnings struct{ list []string }

func (w *warnings) AddWarning(_, text string) { w.list = append(w.list, text) }

// syncedInformer stands for a params informer that has listed: CollectParams only asks it
// whether it has synced, and reads the lister.
type syncedInformer struct{ cache.SharedIndexInformer }

func (syncedInformer) HasSynced() bool { return true }

type paramInformer struct {
	lister cache.GenericLister
}

func (p paramInformer) Informer() cache.SharedIndexInformer { return syncedInformer{} }
func (p paramInformer) Lister() cache.GenericLister         { return p.lister }

var _ informers.GenericInformer = paramInformer{}

var rulePrefix = regexp.MustCompile(`^([a-z0-9-]+): `)

// admitter holds what every request shares: the namespaces (each with the label the API server
// gives it), the matcher and the dispatcher.
type admitter struct {
	set        *policySet
	namespaces cache.Indexer
	matcher    generic.PolicyMatcher
	dispatcher generic.Dispatcher[validating.PolicyHook]
	decoder    runtime.Decoder
	strict     runtime.Decoder
	objects    admission.ObjectInterfaces
}

func newAdmitter(set *policySet) *admitter {
	nsIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	m := generic.NewPolicyMatcher(matching.NewMatcher(corelisters.NewNamespaceLister(nsIndex), nil))
	authz := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionNoOpinion, "", nil
	})
	return &admitter{
		set:        set,
		namespaces: nsIndex,
		matcher:    m,
		dispatcher: validating.NewDispatcher(authz, m),
		decoder:    scheme.Codecs.UniversalDeserializer(),
		strict:     serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer(),
		objects:    admission.NewObjectInterfacesFromScheme(scheme.Scheme),
	}
}

func (a *admitter) namespace(name string) {
	if name == "" {
		return
	}
	if _, ok, _ := a.namespaces.GetByKey(name); ok {
		return
	}
	_ = a.namespaces.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"kubernetes.io/metadata.name": name},
	}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}})
}

// decode is the request body as the API server holds it: a built-in kind decoded into its Go
// type (a value of the wrong type is refused; unknown fields are dropped, as the API server's
// default field validation and Helm's requests drop them), any other kind as unstructured JSON.
func (a *admitter) decode(o *Object, gvk schema.GroupVersionKind) (runtime.Object, string, string) {
	if scheme.Scheme.Recognizes(gvk) {
		obj, _, err := a.decoder.Decode(o.JSON, &gvk, nil)
		if err != nil {
			return nil, err.Error(), ""
		}
		strict := ""
		if _, _, err := a.strict.Decode(o.JSON, &gvk, nil); err != nil {
			strict = err.Error()
		}
		return obj, "", strict
	}
	u := &unstructured.Unstructured{}
	var m map[string]interface{}
	if err := utiljson.Unmarshal(o.JSON, &m); err != nil {
		return nil, err.Error(), ""
	}
	u.Object = m
	return u, "", ""
}

// admit runs one CREATE request of the object, in its namespace (`defaultNS` when it has none).
func (a *admitter) admit(o *Object, defaultNS string) Verdict {
	v := Verdict{
		ID: o.ID(), File: o.File, Document: o.Document, Pointer: o.Pointer, Line: o.Line,
		APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, Namespace: o.Namespace,
		Matched: []string{}, Evaluated: []string{}, Decisions: []Decision{}, Errors: []string{},
	}
	if v.Namespace == "" {
		v.Namespace = defaultNS
	}
	a.namespace(v.Namespace)
	gvk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	obj, refused, strict := a.decode(o, gvk)
	v.Strict = strict
	var matchObj runtime.Object = obj
	if obj == nil {
		// What the policies would have matched, had the API server taken the body.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(o.JSON); err == nil {
			matchObj = u
		} else {
			matchObj = &unstructured.Unstructured{Object: map[string]interface{}{}}
		}
	}
	attrs := admission.NewAttributesRecord(matchObj, nil, gvk, v.Namespace, o.Name, gvr, "",
		admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admission-oracle"})

	type hookOf struct {
		policy  *admv1.ValidatingAdmissionPolicy
		binding *admv1.ValidatingAdmissionPolicyBinding
		rec     *recorder
	}
	var hooks []validating.PolicyHook
	var recs []hookOf
	for _, p := range a.set.policies {
		for _, b := range a.set.bindings {
			if b.Spec.PolicyName != p.Name {
				continue
			}
			ok, _, _, err := a.matcher.DefinitionMatches(attrs, a.objects, validating.NewValidatingAdmissionPolicyAccessor(p))
			if err == nil && ok {
				ok, err = a.matcher.BindingMatches(attrs, a.objects, validating.NewValidatingAdmissionPolicyBindingAccessor(b))
			}
			if err != nil || ok {
				v.Matched = appendOnce(v.Matched, p.Name)
			}
			rec := &recorder{inner: a.set.compiled[p.Name]}
			h := validating.PolicyHook{Policy: p, Bindings: []*admv1.ValidatingAdmissionPolicyBinding{b}, Evaluator: rec}
			if p.Spec.ParamKind != nil {
				pgvk := schema.FromAPIVersionAndKind(p.Spec.ParamKind.APIVersion, p.Spec.ParamKind.Kind)
				pgvr, _ := meta.UnsafeGuessKindToResource(pgvk)
				h.ParamInformer = paramInformer{lister: cache.NewGenericLister(a.set.params, pgvr.GroupResource())}
				h.ParamScope = meta.RESTScopeNamespace
			}
			hooks = append(hooks, h)
			recs = append(recs, hookOf{p, b, rec})
		}
	}
	if refused != "" {
		v.Refused = refused
		return v
	}

	w := &warnings{}
	ctx := warning.WithWarningRecorder(context.Background(), w)
	err := a.dispatcher.Dispatch(ctx, attrs, a.objects, hooks)
	v.Allowed = err == nil
	if err != nil {
		v.Denial = err.Error()
		if se, ok := err.(*apierrors.StatusError); ok {
			v.Denial = se.ErrStatus.Message
		}
	}
	v.Warnings = w.list
	for _, h := range recs {
		for _, res := range h.rec.results {
			if len(res.Decisions) > 0 {
				v.Evaluated = appendOnce(v.Evaluated, h.policy.Name)
			}
			whole := len(res.Decisions) == len(h.policy.Spec.Validations)
			for i, d := range res.Decisions {
				if d.Action == validating.ActionAdmit && d.Evaluation != validating.EvalError {
					continue
				}
				index := -1
				if whole {
					index = i
				}
				actions := []string{"Ignore"}
				if d.Action == validating.ActionDeny {
					actions = nil
					for _, act := range h.binding.Spec.ValidationActions {
						actions = append(actions, string(act))
					}
				}
				rule := ""
				if m := rulePrefix.FindStringSubmatch(d.Message); m != nil && d.Evaluation != validating.EvalError {
					rule = m[1]
				}
				for _, act := range actions {
					v.Decisions = append(v.Decisions, Decision{
						Policy: h.policy.Name, Binding: h.binding.Name, Action: act, Rule: rule,
						Message: d.Message, Error: d.Evaluation == validating.EvalError, Validation: index,
					})
				}
				if d.Evaluation == validating.EvalError {
					v.Errors = append(v.Errors, h.policy.Name+": "+d.Message)
				}
			}
		}
	}
	sort.Strings(v.Matched)
	sort.Strings(v.Evaluated)
	return v
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func writeJSONLine(w interface{ Write([]byte) (int, error) }, v interface{}) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
