//! Where each rule's facts come from: a public document with its address, or the Kubernetes /
//! Helm / YAML source the rule mirrors. `explain`, `rules --format json` and SARIF's `helpUri`
//! read them through [`crate::catalogue::Rule::sources`]. Every address here is one the
//! project's domain research cites, or the public specification or documentation of the format
//! or tool concerned; a source without a public address (the ack-ai-installer chart is not
//! published) has `url: None` and says so.

use super::{Rule, RuleId};

impl Rule {
    /// Where the rule's facts come from.
    pub fn sources(&self) -> &'static [Source] {
        of(self.id)
    }
}

/// One source of a rule's facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Source {
    /// The document's title, or the source file's repository and path.
    pub title: &'static str,
    /// Its public address, when it has one.
    pub url: Option<&'static str>,
}

const fn src(title: &'static str, url: &'static str) -> Source {
    Source {
        title,
        url: Some(url),
    }
}

// Flux documentation.
const FLUX_VALUES_REFERENCES: Source = src(
    "Flux: Helm Releases, values references (spec.valuesFrom)",
    "https://fluxcd.io/flux/components/helm/helmreleases/#values-references",
);

const ARGO_CD_HELM: Source = src(
    "Argo CD: Helm (values, valuesObject, valueFiles, parameters and their precedence)",
    "https://argo-cd.readthedocs.io/en/stable/user-guide/helm/",
);
const ARGO_CD_LIST_GENERATOR: Source = src(
    "Argo CD: ApplicationSet List generator (elements, goTemplate)",
    "https://argo-cd.readthedocs.io/en/stable/operator-manual/applicationset/Generators-List/",
);
const ARGO_CD_APPSET_TEMPLATE: Source = src(
    "Argo CD: ApplicationSet Go templates (goTemplate, goTemplateOptions, fasttemplate)",
    "https://argo-cd.readthedocs.io/en/stable/operator-manual/applicationset/GoTemplate/",
);
const HELMFILE_STATE: Source = src(
    "helmfile: the helmfile.yaml reference (releases' values, set, setString, missingFileHandler)",
    "https://helmfile.readthedocs.io/en/latest/",
);

// Alibaba Cloud ACK / EGS documentation.
const ACK_POLICY: Source = src(
    "Alibaba Cloud ACK: Configure a computing power allocation policy for GPU sharing",
    "https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/configure-a-computing-power-allocation-policy-for-gpu-sharing-1",
);
const ACK_CGPU_FAQ: Source = src(
    "Alibaba Cloud ACK: Usage notes for the memory isolation capability of cGPU (versions, drivers, known issues)",
    "https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/usage-notes-for-memory-isolation-capability-of-cgpu",
);
const ACK_SHARED_GPU: Source = src(
    "Alibaba Cloud ACK: Install and use ack-ai-installer and the GPU inspection tool",
    "https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/install-and-use-ack-ai-installer-and-the-gpu-inspection-tool",
);
const ACK_LABELS: Source = src(
    "Alibaba Cloud ACK: Enable scheduling features (ack.node.gpu.schedule labels)",
    "https://www.alibabacloud.com/help/doc-detail/191140.html",
);
const ACK_UPGRADE: Source = src(
    "Alibaba Cloud ACK: Upgrade the cGPU version on a node",
    "https://www.alibabacloud.com/help/en/document_detail/208147.html",
);
const EGS_DOCKER: Source = src(
    "Alibaba Cloud EGS: Use Docker to install and use cGPU",
    "https://alibabacloud.com/help/en/elastic-gpu-service/latest/use-docker-to-install-and-use-cgpu",
);
const EGS_ENV: Source = src(
    "Alibaba Cloud EGS: cGPU environment variables",
    "https://www.alibabacloud.com/help/doc-detail/171786.htm",
);
const ACK_CGPU_RELEASE_NOTES: Source = Source {
    title: "Alibaba Cloud ACK: ack-cgpu release notes (component and cGPU versions, dates, changes; read as quoted text, address not recorded)",
    url: None,
};
const ECS_INSTANCE_NAMING: Source = src(
    "Alibaba Cloud EGS: Instance naming conventions (ecs.<instance-family>.<nx>large)",
    "https://help.aliyun.com/en/egs/instance-naming-conventions",
);
const ACK_CONTAINEROS: Source = src(
    "Alibaba Cloud ACK: ContainerOS overview",
    "https://www.alibabacloud.com/help/doc-detail/353150.htm",
);
const HAMI_ACK: Source = src(
    "HAMi documentation: Install HAMi on Alibaba Cloud Container Service for Kubernetes (HAMi 2.10.0), Project-HAMi/website",
    "https://github.com/Project-HAMi/website",
);
const ACK_DRA: Source = src(
    "Alibaba Cloud ACK: Schedule GPUs with DRA (ack.node.gpu.schedule=disabled)",
    "https://www.alibabacloud.com/help/en/ack/ack-managed-and-ack-dedicated/user-guide/schedule-gpus-using-dra",
);
const ACK_K8S_1_35: Source = src(
    "Alibaba Cloud ACK: Kubernetes 1.35 release notes (cgroup v1 support removed; containerd 1.x for the last time)",
    "https://www.alibabacloud.com/help/doc-detail/3021327.html",
);
const ACK_K8S_1_36: Source = Source {
    title: "Alibaba Cloud ACK: Kubernetes 1.36 release notes (containerd 2; read as quoted text, address not recorded)",
    url: None,
};
const ACK_DRIVERS: Source = src(
    "Alibaba Cloud ACK: NVIDIA driver versions supported by ACK",
    "https://www.alibabacloud.com/help/en/document_detail/2402382.html",
);
const ACK_GPU_LABELS: Source = Source {
    title: "Alibaba Cloud ACK: GPU node labels (ack.node.gpu.schedule mig and disabled, alibabacloud.com/nodepool-id; read as quoted text, address not recorded)",
    url: None,
};
const ALICLOUD_REGIONS: Source = src(
    "aliyun/terraform-provider-alicloud: alicloud/connectivity/regions.go (region ids)",
    "https://github.com/aliyun/terraform-provider-alicloud/blob/master/alicloud/connectivity/regions.go",
);
const CHART_VALUES: Source = Source {
    title: "the ack-ai-installer chart's documented `cgpu:` values (the chart itself is not published)",
    url: None,
};

// NVIDIA.
const NVIDIA_GFD: Source = src(
    "NVIDIA GPU Feature Discovery: Generated Labels (nvidia.com/cuda.driver.major/.minor/.rev, nvidia.com/cuda.driver-version.full)",
    "https://github.com/NVIDIA/gpu-feature-discovery#generated-labels",
);

// Kubernetes.
const K8S_CGROUP_V2: Source = src(
    "Kubernetes: About cgroup v2 (distributions that use cgroup v2 by default)",
    "https://kubernetes.io/docs/concepts/architecture/cgroups/",
);
const K8S_WELL_KNOWN_LABELS: Source = src(
    "Kubernetes: Well-Known Labels, Annotations and Taints (node.kubernetes.io/instance-type)",
    "https://kubernetes.io/docs/reference/labels-annotations-taints/",
);
const K8S_LABELS: Source = src(
    "Kubernetes: Labels, syntax and character set",
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set",
);
const K8S_VALIDATION: Source = src(
    "kubernetes/kubernetes: staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go",
    "https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go",
);
const K8S_NODE_SELECTOR: Source = src(
    "Kubernetes: Assigning Pods to Nodes, nodeSelector",
    "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodeselector",
);
const K8S_IMAGES: Source = src(
    "Kubernetes: Images (image names, tags, imagePullPolicy)",
    "https://kubernetes.io/docs/concepts/containers/images/",
);
const K8S_ENVVAR: Source = src(
    "Kubernetes API: Pod v1, environment variables (EnvVar.value is a string)",
    "https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#environment-variables",
);
const K8S_ENVVAR_ISSUE: Source = src(
    "kubernetes/kubernetes#82296: an unquoted number in env value is rejected",
    "https://github.com/kubernetes/kubernetes/issues/82296",
);
const K8S_DAEMONSET_STATUS: Source = src(
    "Kubernetes API: DaemonSet v1, DaemonSetStatus",
    "https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/daemon-set-v1/#DaemonSetStatus",
);
const K8S_FIELD_MANAGEMENT: Source = src(
    "Kubernetes: Server-Side Apply, field management (managedFields)",
    "https://kubernetes.io/docs/reference/using-api/server-side-apply/#field-management",
);

// Helm, Go and YAML.
const HELM_VALUES: Source = src(
    "Helm: Values files",
    "https://helm.sh/docs/chart_template_guide/values_files/",
);
const HELM_UPGRADE: Source = src(
    "Helm: helm upgrade (--reuse-values, --reset-values)",
    "https://helm.sh/docs/helm/helm_upgrade/",
);
const HELM_READ_VALUES: Source = src(
    "helm/helm: pkg/chartutil/values.go (ReadValues, through sigs.k8s.io/yaml)",
    "https://github.com/helm/helm/blob/v3.18.0/pkg/chartutil/values.go",
);
const GO_YAML_RESOLVE: Source = src(
    "kubernetes-sigs/yaml: goyaml.v2/resolve.go (YAML 1.1 scalar resolution, as Helm reads values)",
    "https://github.com/kubernetes-sigs/yaml/blob/master/goyaml.v2/resolve.go",
);
const HELM3_VALUES_OPTIONS: Source = src(
    "helm/helm v3.18.0: pkg/cli/values/options.go (MergeValues: yaml.Unmarshal of each -f file, its first document)",
    "https://github.com/helm/helm/blob/v3.18.0/pkg/cli/values/options.go",
);
const HELM4_LOAD_VALUES: Source = src(
    "helm/helm v4.2.3: pkg/chart/v2/loader/load.go (LoadValues: every document of a values file, merged)",
    "https://github.com/helm/helm/blob/v4.2.3/pkg/chart/v2/loader/load.go",
);
const SIGS_YAML: Source = src(
    "kubernetes-sigs/yaml: yaml.go (YAML → JSON → map: every number a float64)",
    "https://github.com/kubernetes-sigs/yaml/blob/master/yaml.go",
);
const YAML11_BOOL: Source = src("YAML 1.1 Boolean type", "https://yaml.org/type/bool.html");
const YAML11_INT: Source = src("YAML 1.1 Integer type", "https://yaml.org/type/int.html");
const YAML_SPEC: Source = src(
    "YAML 1.2.2 specification, nodes (mapping keys are unique)",
    "https://yaml.org/spec/1.2.2/#321-nodes",
);
const GO_TEMPLATE: Source = src(
    "Go text/template: the `if` action (empty values are false; a non-empty string is true)",
    "https://pkg.go.dev/text/template",
);
const JSON_SCHEMA: Source = src(
    "JSON Schema 2020-12",
    "https://json-schema.org/draft/2020-12",
);
const SEMVER: Source = src(
    "Semantic Versioning 2.0.0 (a -suffix is a pre-release there, not a build flavour)",
    "https://semver.org/#spec-item-9",
);

// Linter design.
const RUFF_UNUSED_NOQA: Source = src(
    "ruff: unused-noqa (RUF100), the model for reporting suppressions that suppress nothing",
    "https://docs.astral.sh/ruff/rules/unused-noqa/",
);
const RUFF_IO_ERROR: Source = src(
    "ruff: io-error (E902), the model for reporting an unreadable input as a finding",
    "https://docs.astral.sh/ruff/rules/io-error/",
);
const TRIVY_IGNORE_EXPIRY: Source = src(
    "trivy: .trivyignore entries with an expiry date (exp:YYYY-MM-DD), the model for `until=`",
    "https://trivy.dev/latest/docs/configuration/filtering/",
);
const CHECKOV_BASELINE: Source = src(
    "checkov: --create-baseline and --baseline, findings recorded without line numbers",
    "https://www.checkov.io/2.Basics/CLI%20Command%20Reference.html",
);

/// The sources of one rule. The match names every rule: a new rule without sources does not
/// compile.
pub fn of(rule: RuleId) -> &'static [Source] {
    match rule {
        RuleId::YamlSyntax => &[HELM_READ_VALUES, YAML_SPEC],
        RuleId::DuplicateKey => &[YAML_SPEC, GO_YAML_RESOLVE],
        RuleId::CgpuMissing => &[CHART_VALUES, HELM_VALUES],
        RuleId::NotAMapping => &[CHART_VALUES, HELM_VALUES],
        RuleId::ValuesFromUnchecked => &[FLUX_VALUES_REFERENCES],
        RuleId::ValuesNotRead => &[ARGO_CD_HELM],
        RuleId::ValuesFileMissing => &[HELMFILE_STATE],
        RuleId::AppsetGeneratorFails => &[ARGO_CD_LIST_GENERATOR, ARGO_CD_APPSET_TEMPLATE],
        RuleId::UnknownKey => &[CHART_VALUES, HELM_VALUES],
        RuleId::Yaml11Scalar => &[GO_YAML_RESOLVE, YAML11_BOOL, YAML11_INT],
        RuleId::StringBoolean => &[GO_TEMPLATE, CHART_VALUES],
        RuleId::WrongType => &[CHART_VALUES, JSON_SCHEMA],
        RuleId::PolicyNotInteger | RuleId::PolicyOutOfRange | RuleId::PolicyQuoted => &[ACK_POLICY],
        RuleId::PolicyWholeFloat => &[ACK_POLICY, SIGS_YAML],
        RuleId::HelmVersionsDiffer => &[HELM3_VALUES_OPTIONS, HELM4_LOAD_VALUES],
        RuleId::PolicyWeightHint => &[ACK_POLICY],
        RuleId::DisabledWithSettings => &[GO_TEMPLATE, CHART_VALUES],
        RuleId::ImageReference => &[K8S_IMAGES, ACK_POLICY],
        RuleId::ImageName => &[ACK_POLICY, CHART_VALUES],
        RuleId::TagInvalid => &[ACK_CGPU_FAQ, SEMVER],
        RuleId::TagTooOld => &[ACK_POLICY],
        RuleId::TagKnownDeadlock => &[ACK_CGPU_FAQ, EGS_DOCKER],
        RuleId::TagFlavour => &[CHART_VALUES, ACK_CGPU_FAQ],
        RuleId::TagNewerThanData => &[ACK_CGPU_FAQ],
        RuleId::TagForm => &[ACK_POLICY, ACK_UPGRADE],
        RuleId::PullPolicy => &[K8S_IMAGES],
        RuleId::NodeSelectorType => &[K8S_NODE_SELECTOR],
        RuleId::LabelKey | RuleId::LabelValue => &[K8S_LABELS, K8S_VALIDATION],
        RuleId::LabelValueType => &[K8S_LABELS, GO_YAML_RESOLVE],
        RuleId::ScheduleLabel => &[ACK_LABELS],
        RuleId::InstallerNamespace => &[ACK_POLICY],
        RuleId::InstallerPolicyMissing => &[ACK_POLICY, CHART_VALUES],
        RuleId::InstallerPolicyUnquoted => &[K8S_ENVVAR, K8S_ENVVAR_ISSUE],
        RuleId::InstallerPolicyInvalid => &[ACK_POLICY],
        RuleId::InstallerPolicyDuplicate => &[K8S_ENVVAR, ACK_POLICY],
        RuleId::InstallerPolicyValuefrom => &[K8S_ENVVAR],
        RuleId::InstallerImageTag => &[K8S_IMAGES, ACK_POLICY],
        RuleId::RegistryPublicEndpoint | RuleId::RegistryHost => &[ACK_POLICY],
        RuleId::RegionInvalid | RuleId::RegionUnknown => &[ALICLOUD_REGIONS],
        RuleId::RegionMismatch => &[ACK_POLICY, ALICLOUD_REGIONS],
        RuleId::InstallerSelector => &[ACK_LABELS, ACK_CGPU_FAQ],
        RuleId::WorkloadEnvOnInstaller => &[EGS_ENV, ACK_POLICY],
        RuleId::ClusterPolicyMismatch => &[ACK_POLICY],
        RuleId::RolloutIncomplete => &[K8S_DAEMONSET_STATUS],
        RuleId::PriorityClass => &[ACK_SHARED_GPU],
        RuleId::PolicyDrift => &[K8S_FIELD_MANAGEMENT, ACK_POLICY],
        RuleId::UpgradeDefaultFallback => &[HELM_UPGRADE, HELM_VALUES, CHART_VALUES],
        RuleId::UpgradeDowngrade => &[ACK_UPGRADE, ACK_CGPU_FAQ],
        RuleId::UnusedIgnore => &[RUFF_UNUSED_NOQA],
        RuleId::IoError => &[RUFF_IO_ERROR],
        RuleId::SuppressionExpired => &[TRIVY_IGNORE_EXPIRY, RUFF_UNUSED_NOQA],
        RuleId::BaselineUnmatched => &[CHECKOV_BASELINE, RUFF_UNUSED_NOQA],
        RuleId::VirtualNodeCgpu => &[ACK_SHARED_GPU],
        RuleId::LegacyCgpuLabel => &[ACK_LABELS, ACK_CGPU_FAQ],
        RuleId::DriverIncompatible => &[ACK_CGPU_FAQ, ACK_UPGRADE, NVIDIA_GFD],
        RuleId::NodeOsUnsupported => &[ACK_SHARED_GPU, ACK_CGPU_RELEASE_NOTES],
        RuleId::NodeCgroupV2 => &[ACK_CGPU_RELEASE_NOTES, K8S_CGROUP_V2],
        RuleId::NodeFamilyUnsupported => &[
            ACK_CGPU_FAQ,
            ACK_CGPU_RELEASE_NOTES,
            ECS_INSTANCE_NAMING,
            K8S_WELL_KNOWN_LABELS,
        ],
        RuleId::NodeKnownIssue => &[
            ACK_CGPU_FAQ,
            ACK_CGPU_RELEASE_NOTES,
            ACK_CONTAINEROS,
            NVIDIA_GFD,
        ],
        RuleId::PodsPerGpu => &[ACK_SHARED_GPU, ACK_CGPU_FAQ],
        RuleId::HamiDevicePluginConflict => &[HAMI_ACK, ACK_DRA, ACK_LABELS],
        RuleId::NodeKubeletCgroupV2 => &[ACK_K8S_1_35, ACK_CGPU_RELEASE_NOTES],
        RuleId::NodeContainerd2 => &[ACK_K8S_1_35, ACK_K8S_1_36, ACK_UPGRADE],
        RuleId::NodeDriverOutdated => &[ACK_DRIVERS, NVIDIA_GFD],
        RuleId::NodeFamilyNeeds => &[ACK_DRIVERS, ACK_CGPU_FAQ, K8S_WELL_KNOWN_LABELS],
        RuleId::InstallerSelectsExclusiveNode => &[ACK_GPU_LABELS, ACK_DRA, ACK_LABELS],
        RuleId::NodeNotConverged => &[ACK_POLICY, ACK_CGPU_FAQ],
        RuleId::NodePoolDriverDrift => &[ACK_DRIVERS, ACK_GPU_LABELS],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::RULES;

    #[test]
    fn every_rule_has_a_public_source() {
        for r in RULES {
            let s = of(r.id);
            assert!(!s.is_empty(), "{} has no source", r.name);
            assert!(
                s.iter().any(|s| s.url.is_some()),
                "{} has no source with a public address",
                r.name
            );
            for s in s {
                if let Some(u) = s.url {
                    assert!(u.starts_with("https://"), "{u}");
                    assert!(!u.contains("example"), "{u}");
                }
            }
        }
    }
}
