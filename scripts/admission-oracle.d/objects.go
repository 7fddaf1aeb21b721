package main

// The objects of a file as kubectl sends them: every YAML document read by go-yaml v2 and made
// JSON by sigs.k8s.io/yaml (kubectl's reader, YAML 1.1 typing: `yes` is a boolean, `2.0` the
// number 2), a List's items one by one. Documents are numbered as cgpu-lint numbers them (its
// reader is a port of go-yaml v2: an empty document counts), so an object is named the way
// check's findings name it: file, document, JSON pointer.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// Object is one Kubernetes object of an input file.
type Object struct {
	File     string
	Document int // 1-based
	Pointer  string
	// The line of its metadata.name (what `check --admission-policy` prints), 0 if unknown.
	Line       int
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	JSON       []byte
}

// ID names the object: file, document and pointer.
func (o *Object) ID() string {
	return fmt.Sprintf("%s#%d%s", o.File, o.Document, o.Pointer)
}

// readObjects returns the file's objects; an error when the file is not YAML kubectl could read
// (with the objects of the documents before the broken one left out too: kubectl stops there).
func readObjects(path string) ([]Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs []interface{}
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	for {
		var v interface{}
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", path, len(docs)+1, err)
		}
		docs = append(docs, v)
	}
	lines := nameLines(data, len(docs))
	var out []Object
	for i, doc := range docs {
		if doc == nil {
			continue
		}
		text, err := yamlv2.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", path, i+1, err)
		}
		j, err := yaml.YAMLToJSON(text)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", path, i+1, err)
		}
		var root map[string]interface{}
		d := json.NewDecoder(bytes.NewReader(j))
		d.UseNumber()
		if d.Decode(&root) != nil || root == nil {
			continue
		}
		kind, _ := root["kind"].(string)
		items, isList := root["items"].([]interface{})
		if strings.HasSuffix(kind, "List") && isList {
			for k, item := range items {
				m, ok := item.(map[string]interface{})
				if !ok {
					continue
				}
				if o, ok := object(path, i+1, fmt.Sprintf("/items/%d", k), m); ok {
					o.Line = lines[i][o.Pointer]
					out = append(out, o)
				}
			}
			continue
		}
		if _, ok := root["apiVersion"]; !ok {
			continue
		}
		if _, ok := root["kind"]; !ok {
			continue
		}
		if o, ok := object(path, i+1, "", root); ok {
			o.Line = lines[i][""]
			out = append(out, o)
		}
	}
	return out, nil
}

func object(file string, doc int, pointer string, m map[string]interface{}) (Object, bool) {
	api, ok1 := m["apiVersion"].(string)
	kind, ok2 := m["kind"].(string)
	if !ok1 || !ok2 {
		return Object{}, false
	}
	meta, _ := m["metadata"].(map[string]interface{})
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	j, err := json.Marshal(m)
	if err != nil {
		return Object{}, false
	}
	return Object{File: file, Document: doc, Pointer: pointer, APIVersion: api, Kind: kind, Name: name, Namespace: ns, JSON: j}, true
}

// nameLines finds, per document, the line of each object's metadata.name (or of the object
// where it has none), by pointer, with go-yaml v3's positions; nothing when v3 counts the
// documents differently.
func nameLines(data []byte, count int) []map[string]int {
	out := make([]map[string]int, count)
	for i := range out {
		out[i] = map[string]int{}
	}
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var nodes []*yamlv3.Node
	for {
		var n yamlv3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out
		}
		nodes = append(nodes, &n)
	}
	if len(nodes) != count {
		return out
	}
	for i, n := range nodes {
		root := n
		if root.Kind == yamlv3.DocumentNode && len(root.Content) == 1 {
			root = root.Content[0]
		}
		out[i][""] = nameLine(root)
		if items := get(root, "items"); items != nil && items.Kind == yamlv3.SequenceNode {
			for k, item := range items.Content {
				out[i][fmt.Sprintf("/items/%d", k)] = nameLine(item)
			}
		}
	}
	return out
}

func nameLine(n *yamlv3.Node) int {
	if name := get(get(n, "metadata"), "name"); name != nil {
		return name.Line
	}
	return n.Line
}

func get(n *yamlv3.Node, key string) *yamlv3.Node {
	for n != nil && n.Kind == yamlv3.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yamlv3.MappingNode {
		return nil
	}
	var found *yamlv3.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			found = n.Content[i+1] // the last of a duplicated key, as go-yaml v2 keeps it
		}
	}
	return found
}
