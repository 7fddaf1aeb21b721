// This file is laid into k8s.io/apiserver/pkg/admission/plugin/policy/validating by the
// oracle's build (`go build -overlay`), so that the oracle compiles each policy with the API
// server's own compilePolicy (variables, matchConditions, validations, messageExpressions and
// failurePolicy, in the composition environment with the strict cost), not with a copy of it.

package validating

// CompilePolicy is compilePolicy, the function the API server's policy source calls on every
// ValidatingAdmissionPolicy it reads.
func CompilePolicy(policy *Policy) Validator { return compilePolicy(policy) }
