//! Messages speak the project's words: no JSON-Schema vocabulary reaches a
//! user. Every cgpu key gets every kind of wrong value (null, booleans, numbers, strings, lists,
//! mappings, as Helm types them), alone and beside other keys, nested a level down; the report in
//! every format, `fix --diff` and `explain` must be free of the schema library's phrases.

use crate::common::bin;

/// What the jsonschema crate (and JSON-Schema validators generally) say.
const VOCABULARY: &[&str] = &[
    "oneOf",
    "anyOf",
    "allOf",
    "is not valid under",
    "valid under more than one",
    "additionalProperties",
    "Additional properties",
    "is not of type",
    "does not match",
    "is not one of [",
    "is longer than",
    "is shorter than",
    "less than the minimum",
    "greater than the maximum",
    "is a required property",
    "maxLength",
    "\"type\":",
];

use cgpu_lint::cgpu::KNOWN_KEYS as KEYS;

/// Wrong-typed (and merely odd) values, as written in YAML.
const VALUES: &[&str] = &[
    "~",
    "",
    "null",
    "true",
    "no",
    "yes",
    "0",
    "7",
    "-1",
    "1.5",
    "2.0",
    "01",
    "0x1F",
    "\"02\"",
    "\"\"",
    "\"x\"",
    "latest",
    "[2]",
    "[]",
    "[a=b]",
    "{}",
    "{a: 1}",
    "{a: [1]}",
    "{a: \"x\"}",
    "!!binary aGVsbG8=",
    "\"a very long string that goes on and on and on and on and on and on and on and on\"",
];

#[test]
fn no_json_schema_vocabulary_in_any_format() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    for key in KEYS {
        for value in VALUES {
            n += 1;
            std::fs::write(
                dir.path().join(format!("v{n:03}.yaml")),
                format!("cgpu:\n  {key}: {value}\n"),
            )
            .unwrap();
            n += 1;
            std::fs::write(
                dir.path().join(format!("v{n:03}.yaml")),
                format!("cgpu:\n  enabled: true\n  {key}: {value}\n  policy: 1\n"),
            )
            .unwrap();
            n += 1;
            std::fs::write(
                dir.path().join(format!("v{n:03}.yaml")),
                format!("cgpu:\n  nodeSelector:\n    {key}: {value}\n"),
            )
            .unwrap();
        }
        // Every key wrong at once.
    }
    let all: String = KEYS.iter().map(|k| format!("  {k}: [2]\n")).collect();
    std::fs::write(dir.path().join("all.yaml"), format!("cgpu:\n{all}")).unwrap();
    std::fs::write(dir.path().join("scalar.yaml"), "cgpu: 3\n").unwrap();

    let mut checked = 0;
    for format in ["human", "json", "sarif", "github", "junit"] {
        let out = bin()
            .current_dir(dir.path())
            .args([
                "check",
                "--no-config",
                "--color",
                "never",
                "--format",
                format,
                ".",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{format}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("wrong-type"),
            "{format}: no wrong-type at all?"
        );
        for word in VOCABULARY {
            // SARIF carries the rule catalogue too, which may describe the schema in prose:
            // only the results' messages are user-facing findings there.
            let shown: Vec<&str> = text.lines().filter(|l| l.contains(word)).collect();
            assert!(
                shown.is_empty(),
                "{format}: `{word}` reaches the user:\n{}",
                shown.join("\n")
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 5);
    let out = bin()
        .current_dir(dir.path())
        .args(["fix", "--no-config", "--diff", "."])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    for word in VOCABULARY {
        assert!(!text.contains(word), "fix --diff: `{word}` in\n{text}");
    }
    let out = bin().args(["explain", "wrong-type"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for word in VOCABULARY {
        assert!(!text.contains(word), "explain: `{word}` in\n{text}");
    }
}

#[test]
fn null_says_helm_deletes_the_default() {
    let dir = tempfile::tempdir().unwrap();
    for key in [
        "policy",
        "enabled",
        "image",
        "imagePullPolicy",
        "checkRegions",
    ] {
        std::fs::write(dir.path().join("v.yaml"), format!("cgpu:\n  {key}: ~\n")).unwrap();
        let out = bin()
            .current_dir(dir.path())
            .args(["check", "--no-config", "--format", "json", "v.yaml"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let d = &v["diagnostics"][0];
        assert_eq!(d["rule"], "wrong-type", "{key}: {v:#}");
        let m = d["message"].as_str().unwrap();
        assert!(
            m.contains("empty: Helm deletes the chart's default"),
            "{key}: {m}"
        );
    }
}
