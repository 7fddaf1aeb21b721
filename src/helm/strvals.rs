//! Helm's `--set`, `--set-string` and `--set-json` parser (`pkg/strvals/parser.go`, the same in
//! Helm 3.18 and 4.2), ported statement by statement, writing into the values tree. Its quirks are
//! Helm's: `a=` is the empty string, `a={x,y}` a list, `--set` types only `true`/`false`/`null`
//! (any case) and base-10 integers without a leading zero, a key path into a value that is not a
//! mapping or list is an error.

use std::sync::Arc;

use super::{Refusal, SetKind, Version};
use crate::yaml::{Entry, KeyKind, Node, Scalar, Source, Style, Value};

const MAX_INDEX: i64 = 65536;
const MAX_NESTED_NAME_LEVEL: usize = 30;

enum Stop {
    Eof,
    Msg(String),
}

type R<T> = Result<T, Stop>;

struct Parser {
    chars: Vec<char>,
    pos: usize,
    kind: SetKind,
    src: Arc<Source>,
}

/// Apply one flag's argument to the values.
pub fn apply(kind: SetKind, arg: &str, base: &mut Node, version: Version) -> Result<(), Refusal> {
    let src = Source::new(format!("{} {arg}", kind.flag()), arg.to_string());
    let fail = |message: String| Refusal {
        src: src.clone(),
        offset: 0,
        message: format!("{}: {message}", kind.flag()),
    };
    if kind == SetKind::Json && version == Version::Four {
        let trimmed = arg.trim();
        if trimmed.starts_with('{') {
            let parsed: serde_json::Value = serde_json::from_str(trimmed)
                .map_err(|_| fail(format!("failed parsing --set-json data JSON: {arg}")))?;
            let node = from_json(&parsed, &src)
                .ok_or_else(|| fail(format!("failed parsing --set-json data JSON: {arg}")))?;
            super::merge_maps(base, node);
            return Ok(());
        }
    }
    let mut p = Parser {
        chars: arg.chars().collect(),
        pos: 0,
        kind,
        src: src.clone(),
    };
    let Value::Map(entries) = &mut base.value else {
        return Err(fail("the values are not a mapping".into()));
    };
    loop {
        match p.key(entries, 0) {
            Ok(()) => continue,
            Err(Stop::Eof) => return Ok(()),
            Err(Stop::Msg(m)) => return Err(fail(m)),
        }
    }
}

fn node(src: &Arc<Source>, value: Value) -> Node {
    Node {
        value,
        span: 0..src.text.len(),
        style: Style::Plain,
        src: src.clone(),
        via_alias: None,
        alias_at: None,
        refused: None,
    }
}

fn entry(key: &str, value: Node) -> Entry {
    Entry {
        key: key.to_string(),
        key_span: 0..0,
        key_style: Style::Plain,
        value,
        merged: false,
        key_kind: KeyKind::Str,
    }
}

/// A JSON value as Go's `json.Unmarshal` into `interface{}` makes it (numbers float64).
fn from_json(v: &serde_json::Value, src: &Arc<Source>) -> Option<Node> {
    use serde_json::Value as J;
    let value = match v {
        J::Null => Value::Scalar(Scalar::Null),
        J::Bool(b) => Value::Scalar(Scalar::Bool(*b)),
        J::Number(n) => {
            let f = n.as_f64()?;
            if !f.is_finite() {
                return None;
            }
            Value::Scalar(Scalar::Float(f))
        }
        J::String(s) => Value::Scalar(Scalar::Str(s.clone())),
        J::Array(items) => Value::Seq(
            items
                .iter()
                .map(|i| from_json(i, src))
                .collect::<Option<_>>()?,
        ),
        J::Object(map) => Value::Map(
            map.iter()
                .map(|(k, v)| Some(entry(k, from_json(v, src)?)))
                .collect::<Option<_>>()?,
        ),
    };
    Some(node(src, value))
}

fn set(data: &mut Vec<Entry>, key: &str, val: Node) {
    if key.is_empty() {
        return;
    }
    match data.iter_mut().find(|e| e.key == key) {
        Some(e) => e.value = val,
        None => data.push(entry(key, val)),
    }
}

fn get<'a>(data: &'a [Entry], key: &str) -> Option<&'a Node> {
    data.iter().find(|e| e.key == key).map(|e| &e.value)
}

fn quote(s: &str) -> String {
    let mut out = String::new();
    super::json::string(s, &mut out);
    out
}

impl Parser {
    fn read(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn unread(&mut self) {
        self.pos -= 1;
    }

    /// `runesUntil`: the text up to a stop rune (backslash escapes the next rune), the stop rune,
    /// or None at the end.
    fn until(&mut self, stop: &[char]) -> (String, Option<char>) {
        let mut v = String::new();
        loop {
            match self.read() {
                None => return (v, None),
                Some(c) if stop.contains(&c) => return (v, Some(c)),
                Some('\\') => match self.read() {
                    None => return (v, None),
                    Some(n) => v.push(n),
                },
                Some(c) => v.push(c),
            }
        }
    }

    fn typed(&self, s: &str) -> Node {
        let scalar = if self.kind == SetKind::String {
            Scalar::Str(s.to_string())
        } else if s.eq_ignore_ascii_case("true") {
            Scalar::Bool(true)
        } else if s.eq_ignore_ascii_case("false") {
            Scalar::Bool(false)
        } else if s.eq_ignore_ascii_case("null") {
            Scalar::Null
        } else if s == "0" {
            Scalar::Int(0)
        } else if !s.is_empty()
            && !s.starts_with('0')
            && let Ok(i) = s.parse::<i64>()
        {
            Scalar::Int(i.into())
        } else {
            Scalar::Str(s.to_string())
        };
        node(&self.src, Value::Scalar(scalar))
    }

    /// `key`: one `name=value` (or `name.…`, `name[i]…`). The returns are Go's, kept one for one.
    #[allow(clippy::needless_return)]
    fn key(&mut self, data: &mut Vec<Entry>, mut level: usize) -> R<()> {
        {
            let (k, last) = self.until(&['=', '[', ',', '.']);
            match last {
                None => {
                    if k.is_empty() {
                        return Err(Stop::Eof);
                    }
                    return Err(Stop::Msg(format!("key {} has no value", quote(&k))));
                }
                Some('[') => {
                    let i = self.key_index()?;
                    let list = match get(data, &k) {
                        None => Vec::new(),
                        Some(Node {
                            value: Value::Seq(items),
                            ..
                        }) => items.clone(),
                        Some(other) => {
                            return Err(Stop::Msg(format!(
                                "unable to parse key: interface conversion: `{k}` is a {}, not a list",
                                other.type_name()
                            )));
                        }
                    };
                    let (list, err) = self.list_item(list, i, level);
                    set(data, &k, node(&self.src, Value::Seq(list)));
                    return err;
                }
                Some('=') => {
                    if self.kind == SetKind::Json {
                        if self.empty_val() {
                            set(data, &k, node(&self.src, Value::Scalar(Scalar::Null)));
                            return Ok(());
                        }
                        let v = self.json_value()?;
                        set(data, &k, v);
                        self.empty_val();
                        return Ok(());
                    }
                    return match self.val_list() {
                        Ok(list) => {
                            set(data, &k, node(&self.src, Value::Seq(list)));
                            Ok(())
                        }
                        Err(ListErr::Eof) => {
                            set(data, &k, self.typed_str(""));
                            Err(Stop::Eof)
                        }
                        Err(ListErr::NotList) => {
                            // Go's `v, e := t.reader(rs)` reassigns `e`: the end of the input
                            // after a value is not reported here (the next key() finds it).
                            let (rs, _) = self.val();
                            let v = self.typed(&rs);
                            set(data, &k, v);
                            Ok(())
                        }
                        Err(ListErr::Msg(m)) => Err(Stop::Msg(m)),
                    };
                }
                Some(',') => {
                    set(data, &k, self.typed_str(""));
                    return Err(Stop::Msg(format!(
                        "key {} has no value (cannot end with ,)",
                        quote(&k)
                    )));
                }
                _ => {
                    level += 1;
                    if level > MAX_NESTED_NAME_LEVEL {
                        return Err(Stop::Msg(format!(
                            "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                        )));
                    }
                    let mut inner = match get(data, &k) {
                        None => Vec::new(),
                        Some(Node {
                            value: Value::Map(entries),
                            ..
                        }) => entries.clone(),
                        Some(other) => {
                            return Err(Stop::Msg(format!(
                                "unable to parse key: interface conversion: `{k}` is a {}, not a mapping",
                                other.type_name()
                            )));
                        }
                    };
                    let e = self.key(&mut inner, level);
                    if e.is_ok() && inner.is_empty() {
                        return Err(Stop::Msg(format!("key map {} has no value", quote(&k))));
                    }
                    if !inner.is_empty() {
                        set(data, &k, node(&self.src, Value::Map(inner)));
                    }
                    return e;
                }
            }
        }
    }

    fn typed_str(&self, s: &str) -> Node {
        node(&self.src, Value::Scalar(Scalar::Str(s.to_string())))
    }

    fn key_index(&mut self) -> R<i64> {
        let (v, last) = self.until(&[']']);
        if last.is_none() {
            return Err(Stop::Eof);
        }
        go_atoi(&v).ok_or_else(|| {
            Stop::Msg(format!(
                "error parsing index: strconv.Atoi: parsing {}: invalid syntax",
                quote(&v)
            ))
        })
    }

    fn set_index(&self, list: &mut Vec<Node>, index: i64, val: Node) -> R<()> {
        if index < 0 {
            return Err(Stop::Msg(format!("negative {index} index not allowed")));
        }
        if index > MAX_INDEX {
            return Err(Stop::Msg(format!(
                "index of {index} is greater than maximum supported index of {MAX_INDEX}"
            )));
        }
        let index = index as usize;
        while list.len() <= index {
            list.push(node(&self.src, Value::Scalar(Scalar::Null)));
        }
        list[index] = val;
        Ok(())
    }

    /// `listItem`: returns the list as it stands and the error, as Go's does.
    fn list_item(&mut self, mut list: Vec<Node>, i: i64, level: usize) -> (Vec<Node>, R<()>) {
        if i < 0 {
            return (
                list,
                Err(Stop::Msg(format!("negative {i} index not allowed"))),
            );
        }
        let (k, last) = self.until(&['[', '.', '=']);
        if !k.is_empty() {
            return (
                list,
                Err(Stop::Msg(format!(
                    "unexpected data at end of array index: {}",
                    quote(&k)
                ))),
            );
        }
        match last {
            None => (list, Err(Stop::Eof)),
            Some('=') => {
                if self.kind == SetKind::Json {
                    if self.empty_val() {
                        let r = self.set_index(
                            &mut list,
                            i,
                            node(&self.src, Value::Scalar(Scalar::Null)),
                        );
                        return (list, r);
                    }
                    let v = match self.json_value() {
                        Ok(v) => v,
                        Err(e) => return (list, Err(e)),
                    };
                    if let Err(e) = self.set_index(&mut list, i, v) {
                        return (list, Err(e));
                    }
                    self.empty_val();
                    return (list, Ok(()));
                }
                let r = match self.val_list() {
                    Ok(vl) => self.set_index(&mut list, i, node(&self.src, Value::Seq(vl))),
                    Err(ListErr::Eof) => self.set_index(&mut list, i, self.typed_str("")),
                    Err(ListErr::NotList) => {
                        let (rs, _) = self.val();
                        let v = self.typed(&rs);
                        self.set_index(&mut list, i, v)
                    }
                    Err(ListErr::Msg(m)) => Err(Stop::Msg(m)),
                };
                (list, r)
            }
            Some('[') => {
                let next = match self.key_index() {
                    Ok(n) => n,
                    Err(e) => return (list, Err(e)),
                };
                let current = match list.get(i as usize) {
                    Some(Node {
                        value: Value::Seq(items),
                        ..
                    }) => items.clone(),
                    Some(Node {
                        value: Value::Scalar(Scalar::Null),
                        ..
                    })
                    | None => Vec::new(),
                    Some(other) => {
                        let msg = format!(
                            "unable to parse key: interface conversion: index {i} is a {}, not a list",
                            other.type_name()
                        );
                        return (list, Err(Stop::Msg(msg)));
                    }
                };
                let (list2, err) = self.list_item(current, next, level);
                if let Err(e) = err {
                    return (list, Err(e));
                }
                let r = self.set_index(&mut list, i, node(&self.src, Value::Seq(list2)));
                (list, r)
            }
            _ => {
                let mut inner = match list.get(i as usize) {
                    Some(Node {
                        value: Value::Map(entries),
                        ..
                    }) => entries.clone(),
                    _ => Vec::new(),
                };
                let shared = (i as usize) < list.len();
                let e = self.key(&mut inner, level);
                if let Err(e) = e {
                    // Go's inner map is shared with the list element when it existed: the keys
                    // set before the error stay.
                    if shared {
                        list[i as usize] = node(&self.src, Value::Map(inner));
                    }
                    return (list, Err(e));
                }
                let r = self.set_index(&mut list, i, node(&self.src, Value::Map(inner)));
                (list, r)
            }
        }
    }

    /// `emptyVal`: true at the end or after a comma; false (nothing consumed) before a value.
    fn empty_val(&mut self) -> bool {
        loop {
            match self.read() {
                None | Some(',') => return true,
                Some(c) if c.is_whitespace() => continue,
                Some(_) => {
                    self.unread();
                    return false;
                }
            }
        }
    }

    fn val(&mut self) -> (String, bool) {
        let (v, last) = self.until(&[',']);
        (v, last.is_none())
    }

    fn val_list(&mut self) -> Result<Vec<Node>, ListErr> {
        match self.read() {
            None => return Err(ListErr::Eof),
            Some('{') => {}
            Some(_) => {
                self.unread();
                return Err(ListErr::NotList);
            }
        }
        let mut list = Vec::new();
        loop {
            let (rs, last) = self.until(&[',', '}']);
            match last {
                None => return Err(ListErr::Msg("list must terminate with '}'".into())),
                Some('}') => {
                    if let Some(c) = self.read()
                        && c != ','
                    {
                        self.unread();
                    }
                    list.push(self.typed(&rs));
                    return Ok(list);
                }
                _ => list.push(self.typed(&rs)),
            }
        }
    }

    /// One JSON value from the rest of the argument (Go's `json.Decoder.Decode`).
    fn json_value(&mut self) -> R<Node> {
        let rest: String = self.chars[self.pos..].iter().collect();
        let mut stream = serde_json::Deserializer::from_str(&rest).into_iter::<serde_json::Value>();
        match stream.next() {
            Some(Ok(v)) => {
                let consumed = stream.byte_offset();
                self.pos += rest[..consumed].chars().count();
                from_json(&v, &self.src)
                    .ok_or_else(|| Stop::Msg("a JSON number out of float64 range".into()))
            }
            Some(Err(e)) => Err(Stop::Msg(e.to_string())),
            None => Err(Stop::Eof),
        }
    }
}

enum ListErr {
    Eof,
    NotList,
    Msg(String),
}

/// Go's `strconv.Atoi`.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::super::json;
    use super::*;

    fn run(kind: SetKind, arg: &str) -> Result<String, String> {
        let src = Source::new("<values>", String::new());
        let mut base = super::super::empty_map(&src);
        apply(kind, arg, &mut base, Version::Three).map_err(|r| r.message)?;
        Ok(json::to_string(&base))
    }

    #[test]
    fn set_types_like_helm() {
        assert_eq!(
            run(SetKind::Set, "a=1,b=true,c=NULL,d=01,e=,f=0").unwrap(),
            r#"{"a":1,"b":true,"c":null,"d":"01","e":"","f":0}"#
        );
        assert_eq!(
            run(SetKind::Set, "a.b.c=x").unwrap(),
            r#"{"a":{"b":{"c":"x"}}}"#
        );
        assert_eq!(run(SetKind::Set, "a={1,x}").unwrap(), r#"{"a":[1,"x"]}"#);
        assert_eq!(run(SetKind::Set, r"a\.b=1").unwrap(), r#"{"a.b":1}"#);
        assert_eq!(run(SetKind::Set, "a[1]=x").unwrap(), r#"{"a":[null,"x"]}"#);
        assert_eq!(run(SetKind::String, "a=1").unwrap(), r#"{"a":"1"}"#);
        assert_eq!(
            run(SetKind::Json, r#"a={"b":1}"#).unwrap(),
            r#"{"a":{"b":1}}"#
        );
        assert!(run(SetKind::Set, "a").is_err());
        assert!(run(SetKind::Set, "a,b=1").is_err());
    }
}
