//! The tests' fake Kubernetes API server (tests/fake-apiserver, Python 3 standard library) and
//! the PKI it serves TLS with: a CA made by the openssl CLI, a server certificate for 127.0.0.1,
//! a client certificate. Shared by tests/kube/cluster.rs and tests/kube/runbook_kubectl.rs.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

pub const TOKEN: &str = "cgpu-audit-token-3f9a1c";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The kubectl scripts/install-test-tools installs.
pub fn kubectl() -> String {
    let k = root().join("target/tools/kubectl");
    assert!(
        k.is_file(),
        "{} is missing: run scripts/install-test-tools",
        k.display()
    );
    k.to_string_lossy().into_owned()
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for 127.0.0.1, a client certificate (CN cgpu-audit), and a second
/// CA that signed nothing the server has (for the TLS failure).
pub struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    pub fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let key = |name: &str| {
            openssl(
                d,
                &[
                    "genpkey",
                    "-algorithm",
                    "EC",
                    "-pkeyopt",
                    "ec_paramgen_curve:P-256",
                    "-out",
                    name,
                ],
            )
        };
        for (name, cn) in [("ca", "fake-ack-ca"), ("other-ca", "some-other-ca")] {
            key(&format!("{name}.key"));
            openssl(
                d,
                &[
                    "req",
                    "-x509",
                    "-new",
                    "-key",
                    &format!("{name}.key"),
                    "-out",
                    &format!("{name}.pem"),
                    "-days",
                    "2",
                    "-subj",
                    &format!("/CN={cn}"),
                ],
            );
        }
        std::fs::write(
            d.join("server.ext"),
            "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        std::fs::write(d.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
        for (name, cn) in [("server", "kube-apiserver"), ("client", "cgpu-audit")] {
            key(&format!("{name}.key"));
            openssl(
                d,
                &[
                    "req",
                    "-new",
                    "-key",
                    &format!("{name}.key"),
                    "-out",
                    &format!("{name}.csr"),
                    "-subj",
                    &format!("/CN={cn}"),
                ],
            );
            openssl(
                d,
                &[
                    "x509",
                    "-req",
                    "-in",
                    &format!("{name}.csr"),
                    "-CA",
                    "ca.pem",
                    "-CAkey",
                    "ca.key",
                    "-CAcreateserial",
                    "-out",
                    &format!("{name}.pem"),
                    "-days",
                    "2",
                    "-extfile",
                    &format!("{name}.ext"),
                ],
            );
        }
        Pki { dir }
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_string_lossy().into_owned()
    }
}

/// The fake API server process (killed on drop) and its clusters' ports.
pub struct Fake {
    child: Child,
    /// The admin channel (stateful clusters, CONFIG "admin": true).
    pub admin: Option<u16>,
    pub ports: BTreeMap<String, u16>,
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Fake {
    /// Start one server process with these clusters (the fake's CONFIG `clusters` entries;
    /// cert, key, client CA and token are filled in).
    pub fn start(pki: &Pki, clusters: Value) -> Fake {
        Fake::start_with(pki, clusters, json!({}))
    }

    /// Like `start`, with more CONFIG keys (`admin`).
    pub fn start_with(pki: &Pki, clusters: Value, extra: Value) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.jsonl");
        let clusters: Vec<Value> = clusters
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let mut c = c.clone();
                let m = c.as_object_mut().unwrap();
                m.entry("cert").or_insert(json!(pki.path("server.pem")));
                m.entry("key").or_insert(json!(pki.path("server.key")));
                m.entry("client_ca").or_insert(json!(pki.path("ca.pem")));
                m.entry("token").or_insert(json!(TOKEN));
                c
            })
            .collect();
        let conf = dir.path().join("config.json");
        let mut config = json!({"log": log, "clusters": clusters});
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        std::fs::write(&conf, serde_json::to_string(&config).unwrap()).unwrap();
        let mut child = Command::new("python3")
            .arg(root().join("tests/fake-apiserver/fake_apiserver.py"))
            .arg(&conf)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs");
        let mut ports = BTreeMap::new();
        let mut admin = None;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        loop {
            let line = lines
                .next()
                .expect("the fake API server printed READY")
                .unwrap();
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts.as_slice() {
                ["READY"] => break,
                ["ADMIN", port] => admin = Some(port.parse().unwrap()),
                ["READY", name, port] => {
                    ports.insert(name.to_string(), port.parse().unwrap());
                }
                _ => panic!("unexpected line from the fake: {line}"),
            }
        }
        Fake {
            child,
            admin,
            ports,
            log,
            _dir: dir,
        }
    }

    /// One request to the stateful fake's admin channel (its JSON answer as text, and the whole
    /// HTTP answer for messages).
    #[allow(dead_code)]
    pub fn admin_call(&self, req: &Value) -> (String, String) {
        use std::io::{Read, Write};
        let port = self.admin.expect("the fake's admin channel");
        let body = req.to_string();
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            s,
            "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let body = out
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string();
        (body, out)
    }

    pub fn server(&self, cluster: &str) -> String {
        format!("https://127.0.0.1:{}", self.ports[cluster])
    }

    /// Every request the fake has seen.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The logged requests for one path, in order.
    pub fn requests_to(&self, path: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["path"] == path)
            .collect()
    }
}
