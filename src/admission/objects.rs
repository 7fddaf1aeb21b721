//! The objects of an input file as JSON, and each as the API server holds it after decoding
//! (the form a policy sees). Imports no file of its folder.

use serde_json::Value as Json;

/// A Kubernetes object of an input file, as JSON.
#[derive(Debug, Clone)]
pub struct Object {
    /// 1-based document of the file, and the object's JSON pointer in it (`/items/2`).
    pub document: usize,
    pub pointer: String,
    /// Byte offset of its `metadata.name` (for file:line:column).
    pub offset: usize,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    /// A cgpu installer DaemonSet (what the generated policy matches).
    pub installer: bool,
    /// The object as a YAML 1.1 reader such as kubectl types it.
    pub json: Json,
}

/// The objects of a file: each document's object, or the items of a List.
pub fn objects(src: &std::sync::Arc<crate::yaml::Source>) -> Vec<Object> {
    let parsed = crate::yaml::parse(src);
    let mut out = Vec::new();
    for doc in &parsed.documents {
        let Some(root) = &doc.root else { continue };
        let objects = crate::manifest::Objects::of(root);
        for o in objects.iter() {
            out.push(Object {
                document: doc.index,
                pointer: o.pointer.to_string(),
                offset: o
                    .node
                    .pointer("/metadata/name")
                    .unwrap_or(o.node)
                    .span
                    .start,
                kind: o.kind.to_string(),
                name: o.name.to_string(),
                namespace: o.namespace.map(str::to_string),
                installer: o.is_installer(),
                json: o.node.to_json(),
            });
        }
    }
    out
}

/// The object as the API server holds it after decoding, the form a policy sees: nulls and
/// empty strings of `omitempty` fields dropped, and what is not `omitempty` present where the
/// policies read it (the Go type writes its zero value): a DaemonSet's pod template with its
/// `containers` (null), a container's or env entry's `name` (`""`). `Err` names why the API server would refuse to decode it (a field the policy reads
/// that is not a string, where Kubernetes needs one).
pub fn as_admitted(object: &Json) -> Result<Json, String> {
    let mut o = object.clone();
    drop_nulls(&mut o);
    // A DaemonSet's pod template and its containers are not `omitempty` either: the API server
    // holds `containers: null` where the input has none.
    if o.get("kind").and_then(Json::as_str) == Some("DaemonSet")
        && o.get("apiVersion")
            .and_then(Json::as_str)
            .is_some_and(|a| a.starts_with("apps/"))
        && let Some(Json::Object(spec)) = o.get_mut("spec")
        && let Json::Object(template) = spec
            .entry("template")
            .or_insert_with(|| Json::Object(Default::default()))
        && let Json::Object(pod) = template
            .entry("spec")
            .or_insert_with(|| Json::Object(Default::default()))
    {
        pod.entry("containers").or_insert(Json::Null);
    }
    let Some(spec) = o.pointer_mut("/spec/template/spec") else {
        return Ok(o);
    };
    if let Some(sel) = spec.get("nodeSelector") {
        match sel.as_object() {
            Some(m) => {
                if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!("nodeSelector `{k}` is {v}, not a string"));
                }
            }
            None => return Err("nodeSelector is not a map".into()),
        }
    }
    for list in ["initContainers", "containers"] {
        let Some(items) = spec.get_mut(list).and_then(Json::as_array_mut) else {
            continue;
        };
        for c in items {
            if let Some(m) = c.as_object_mut() {
                m.entry("name")
                    .or_insert_with(|| Json::String(String::new()));
            }
            if c.get("image").and_then(Json::as_str) == Some("")
                && let Some(m) = c.as_object_mut()
            {
                m.remove("image");
            }
            match c.get("image") {
                Some(i) if !i.is_string() => {
                    return Err(format!("image is {i}, not a string"));
                }
                _ => {}
            }
            let Some(env) = c.get_mut("env").and_then(Json::as_array_mut) else {
                continue;
            };
            for e in env {
                if let Some(m) = e.as_object_mut() {
                    m.entry("name")
                        .or_insert_with(|| Json::String(String::new()));
                }
                match e.get("value") {
                    Some(Json::String(s)) if s.is_empty() => {
                        if let Some(m) = e.as_object_mut() {
                            m.remove("value");
                        }
                    }
                    Some(Json::String(_)) | None => {}
                    Some(v) => {
                        let name = e.get("name").and_then(Json::as_str).unwrap_or("");
                        return Err(format!(
                            "env `{name}` has value {v}: EnvVar.value must be a string"
                        ));
                    }
                }
            }
        }
    }
    Ok(o)
}

fn drop_nulls(v: &mut Json) {
    match v {
        Json::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(drop_nulls);
        }
        Json::Array(a) => a.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}
