use super::*;

fn core(t: &str) -> Version {
    parse_tag(t).unwrap().core
}

#[test]
fn the_version_table() {
    // (tag, parses, too old for policies (< 1.0.6), known deadlock (<= 1.5.7))
    let table = [
        ("1.0.5", true, true, true),
        ("v1.0.5-4b4d9a1-aliyun", true, true, true),
        ("1.0.6-abc-aliyun", true, false, true),
        ("v1.0.6-abc1234-aliyun", true, false, true),
        ("1.0.6-0123456", true, false, true),
        ("v1.0.6-0a93c4e-aliyun", true, false, true),
        ("v1.5.3-8d3fc1b-aliyun", true, false, true),
        ("1.0.7-fin", true, false, true),
        ("1.5.7", true, false, true),
        ("v1.5.7-0d41c2a-aliyun", true, false, true),
        ("1.5.8", true, false, false),
        ("1.5.10", true, false, false),
        ("v1.5.20-3c9d1e7-aliyun", true, false, false),
        ("latest", false, false, false),
        ("", false, false, false),
        ("1.5", false, false, false),
        ("v1.5.3_aliyun", false, false, false),
        ("vv1.5.3", false, false, false),
        ("01.5.3", false, false, false),
        ("1.5.3-", false, false, false),
    ];
    for (tag, parses, too_old, deadlock) in table {
        let parsed = parse_tag(tag);
        assert_eq!(parsed.is_ok(), parses, "{tag:?} parses");
        if let Ok(t) = parsed {
            assert_eq!(t.core < *min_policy_version(), too_old, "{tag} too old");
            assert_eq!(
                t.core <= *last_deadlock_version(),
                deadlock,
                "{tag} deadlock"
            );
        }
    }
}

#[test]
fn ack_tag_form() {
    for t in [
        "v1.5.3-8d3fc1b-aliyun",
        "v1.0.7-fin",
        "v1.0.6-0123456-aliyun",
        "v1.5.20-3c9d1e7a-fin",
    ] {
        assert!(is_ack_form(t), "{t}");
    }
    for t in [
        "1.5.10",
        "v1.5.10",
        "1.5.3-8d3fc1b-aliyun",
        "v1.5.3-aliyun",
        "v1.5.3-xyz1234-aliyun",
        "v1.5.3-8d3fc1b",
        "v1.5.3-8d3-aliyun",
        "vv1.5.3-8d3fc1b-aliyun",
        "v1.5.3-8d3fc1b-aliyun-fin",
    ] {
        assert!(!is_ack_form(t), "{t}");
    }
}

#[test]
fn suffix_is_a_flavour_not_a_prerelease() {
    assert_eq!(core("v1.0.6-abc-aliyun"), Version::new(1, 0, 6));
    assert!(core("v1.0.6-abc-aliyun") >= *min_policy_version());
    assert!(parse_tag("v1.0.7-fin").unwrap().is_finance());
    assert!(!parse_tag("v1.5.3-8d3fc1b-aliyun").unwrap().is_finance());
    assert_eq!(parse_tag("latest"), Err(TagError::Latest));
}

#[test]
fn driver_matrix() {
    let v = |s: &str| Version::parse(s).unwrap();
    let table = [
        ("1.5.3", "550.144.03", Some(true)),
        ("1.5.20", "575.51.03", Some(true)),
        ("1.5.3", "460.106.00", Some(true)),
        ("1.5.3", "590.1", None),
        ("1.5.2", "535.161.08", Some(false)),
        ("1.0.6", "470.161.03", Some(true)),
        ("1.0.6", "470.182.03", Some(false)),
        ("1.0.9", "525.89.03", Some(true)),
        ("1.0.9", "525.105.17", Some(false)),
        ("1.0.9", "515.86.01", Some(true)),
        ("1.0.9", "510.108.03", Some(true)),
        ("1.0.9", "510.47.03", Some(true)),
        ("1.0.3", "510.47.03", Some(false)),
        ("0.8.13", "460.91.03", Some(true)),
        ("0.8.13", "470.199.02", Some(false)),
        ("0.8.10", "470.199.02", None),
        ("1.5.3", "not-a-version", None),
    ];
    for (cgpu, driver, want) in table {
        assert_eq!(
            driver_supported(&v(cgpu), driver),
            want,
            "cGPU {cgpu} with driver {driver}"
        );
    }
}

#[test]
fn instance_families() {
    assert_eq!(instance_family("ecs.gn7i-c8g1.2xlarge"), Some("gn7i"));
    assert_eq!(instance_family("ecs.gn6i-c4g1.xlarge"), Some("gn6i"));
    assert_eq!(instance_family("ecs.ebmgn7e.32xlarge"), Some("ebmgn7e"));
    assert_eq!(instance_family("ecs.gn8is.4xlarge"), Some("gn8is"));
    assert_eq!(instance_family("gn7i-c8g1.2xlarge"), None);
    assert_eq!(instance_family("ecs.gn7i"), None);
    assert_eq!(instance_family("m5.large"), None);
    assert_eq!(instance_family("ecs..2xlarge"), None);
}

#[test]
fn region_ids() {
    for r in [
        "cn-hangzhou",
        "ap-southeast-1",
        "cn-shanghai-finance-1",
        "cn-north-2-gov-1",
    ] {
        assert!(region_well_formed(r), "{r}");
        assert!(region_known(r), "{r}");
    }
    assert!(region_well_formed("xx-newregion-9"));
    assert!(!region_known("xx-newregion-9"));
    for r in [
        "cn_hangzhou",
        "CN-hangzhou",
        "hangzhou",
        "cn-",
        "-cn",
        "1cn-x",
        "",
    ] {
        assert!(!region_well_formed(r), "{r}");
    }
}

#[test]
fn the_four_host_forms() {
    let h = parse_registry_host("registry-vpc.cn-hangzhou.aliyuncs.com").unwrap();
    assert_eq!(
        (h.form, h.region, h.vpc),
        (HostForm::Acr, "cn-hangzhou", true)
    );
    let h = parse_registry_host("registry.cn-beijing.aliyuncs.com").unwrap();
    assert_eq!(
        (h.form, h.region, h.vpc),
        (HostForm::Acr, "cn-beijing", false)
    );
    let h = parse_registry_host("registry-cn-shanghai-finance-1-vpc.ack.aliyuncs.com").unwrap();
    assert_eq!(
        (h.form, h.region, h.vpc),
        (HostForm::Ack, "cn-shanghai-finance-1", true)
    );
    let h = parse_registry_host("registry-ap-southeast-1.ack.aliyuncs.com").unwrap();
    assert_eq!(
        (h.form, h.region, h.vpc),
        (HostForm::Ack, "ap-southeast-1", false)
    );
    assert!(parse_registry_host("docker.io").is_none());
    assert!(parse_registry_host("my-mirror.example.com").is_none());
    assert!(parse_registry_host("cr.cn-hangzhou.aliyuncs.com").is_none());
}

#[test]
fn rewrites_keep_form_path_and_tag() {
    assert_eq!(
        rewrite_image(
            "registry.cn-beijing.aliyuncs.com/acs/cgpu-installer:v1.0.3",
            true,
            None
        )
        .as_deref(),
        Some("registry-vpc.cn-beijing.aliyuncs.com/acs/cgpu-installer:v1.0.3")
    );
    assert_eq!(
        rewrite_image(
            "registry-cn-beijing-vpc.ack.aliyuncs.com/acs/cgpu-installer:v1.5.10",
            false,
            Some("cn-hangzhou")
        )
        .as_deref(),
        Some("registry-cn-hangzhou-vpc.ack.aliyuncs.com/acs/cgpu-installer:v1.5.10")
    );
    assert_eq!(
        rewrite_image("registry-vpc.cn-hangzhou.aliyuncs.com/acs/x:v1", true, None),
        None
    );
}

#[test]
fn the_range_text_is_the_range() {
    let text = format!("{}–{}", POLICIES.start(), POLICIES.end());
    assert_eq!(POLICY_RANGE_TEXT, text);
    assert_eq!(policy_range_literal!(), text);
    assert_eq!(POLICY_COUNT, POLICIES.count());
}

#[test]
fn the_readings_of_a_policy() {
    use Scalar::{Float, Int, Null, Str};
    let s = |t: &str| Str(t.to_string());
    // (scalar, as a POLICY env value, as a values `policy`): a values string is what the chart
    // renders into POLICY as it is, so it reads as the env does; -0.0 renders "-0".
    let table = [
        (Int(0), Some(0), Some(0)),
        (Int(5), Some(5), Some(5)),
        (Int(6), None, None),
        (Int(-1), None, None),
        (Int(256), None, None),
        (Float(3.0), None, Some(3)),
        (Float(-0.0), None, None),
        (Float(5.5), None, None),
        (Float(6.0), None, None),
        (Float(f64::NAN), None, None),
        (s("3"), Some(3), Some(3)),
        (s("6"), None, None),
        (s(" 3"), None, None),
        (s("03"), None, None),
        (s("+3"), None, None),
        (s("٣"), None, None),
        (s(""), None, None),
        (Null, None, None),
    ];
    for (v, env, values) in table {
        assert_eq!(env_scalar_policy(&v), env, "env {v:?}");
        assert_eq!(values_policy(&v), values, "values {v:?}");
    }
    for (t, n) in [
        ("3", Some(3)),
        (" 1 ", Some(1)),
        ("01", Some(1)),
        ("00", Some(0)),
        ("0", Some(0)),
        ("06", None),
        ("6", None),
        ("1.0", None),
        ("preemptive", None),
        ("10", None),
        ("+1", None),
        (" ", None),
    ] {
        assert_eq!(env_policy_normalised(t), n, "{t:?}");
    }
}
