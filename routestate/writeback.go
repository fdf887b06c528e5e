package routestate

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/shardgate/shardgate/topology"
)

// WriteBack writes what state decides into the topology file at path, so
// the file and main agree: each GSI's state, each switched reshard's
// shards and the clusters they use, and each switched MoveTables' tables
// in their new group (out of main), all taken from the workflow's target
// topology. It edits the YAML tree, so comments and the order of keys
// stay. If the file cannot be written, it returns the edited text and
// the write error: the edit for the admin to make. The result is checked
// to load before it is written. Switched workflows are written in the
// order Apply routes them (State.SwitchOrder), so the file ends with the
// layout the proxies route with.
func WriteBack(path string, st State) (edited []byte, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	edited, err = Edit(data, st)
	if err != nil {
		return nil, err
	}
	if _, err := topology.Parse(path, edited); err != nil {
		return edited, fmt.Errorf("the edited file does not load: %w", err)
	}
	if bytes.Equal(edited, data) {
		return edited, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return edited, err
	}
	return edited, os.WriteFile(path, edited, info.Mode().Perm())
}

// Edit returns the topology file's text with state's decisions written
// in (see WriteBack).
func Edit(data []byte, st State) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("empty topology file")
	}
	root := doc.Content[0]
	groups := mapValue(root, "groups")
	for name, state := range st.GSI {
		for i := 1; groups != nil && i < len(groups.Content); i += 2 {
			if ix := mapValue(mapValue(groups.Content[i], "secondary_indexes"), name); ix != nil {
				setScalar(ix, "state", state)
			}
		}
	}
	for _, id := range st.SwitchOrder() {
		sw := st.Switched[id]
		if !sw.Writes {
			continue
		}
		if sw.Kind != "reshard" && sw.Kind != "movetables" {
			return nil, fmt.Errorf("workflow %s: writing a %s back to the file is not supported; edit the file to match SHOW TOPOLOGY", id, sw.Kind)
		}
		var to yaml.Node
		if err := yaml.Unmarshal([]byte(sw.To), &to); err != nil || len(to.Content) == 0 {
			return nil, fmt.Errorf("workflow %s: target topology: %v", id, err)
		}
		tg := mapValue(mapValue(to.Content[0], "groups"), sw.Group)
		g := mapValue(groups, sw.Group)
		if tg == nil || g == nil {
			return nil, fmt.Errorf("workflow %s: group %s missing in the file or the target", id, sw.Group)
		}
		if sw.Kind == "movetables" {
			if err := moveTables(groups, g, tg, sw.Tables); err != nil {
				return nil, fmt.Errorf("workflow %s: %w", id, err)
			}
		} else {
			for _, k := range []string{"index", "shards"} {
				if v := mapValue(tg, k); v != nil {
					setNode(g, k, v)
				}
			}
		}
		clusters, toClusters := mapValue(root, "clusters"), mapValue(to.Content[0], "clusters")
		for i := 0; toClusters != nil && i+1 < len(toClusters.Content); i += 2 {
			if mapValue(clusters, toClusters.Content[i].Value) == nil {
				clusters.Content = append(clusters.Content, toClusters.Content[i], toClusters.Content[i+1])
			}
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// moveTables writes moved tables into group g of the file as the target
// group tg declares them (a member table's entry, or a reference table),
// and takes them out of every other group that names them (main).
func moveTables(groups, g, tg *yaml.Node, tables []string) error {
	for _, name := range tables {
		q, err := topology.ParseQualifiedName(name)
		if err != nil {
			return err
		}
		for i := 1; groups != nil && i < len(groups.Content); i += 2 {
			if other := groups.Content[i]; other != g {
				for _, k := range []string{"tables", "reference"} {
					removeName(mapValue(other, k), q)
				}
			}
		}
		if k, v := findName(mapValue(tg, "tables"), q); k != nil {
			if members := mapValue(g, "tables"); members != nil && members.Kind == yaml.MappingNode {
				removeName(members, q)
				members.Content = append(members.Content, k, v)
			} else {
				setNode(g, "tables", &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{k, v}})
			}
			continue
		}
		if k, _ := findName(mapValue(tg, "reference"), q); k != nil {
			ref := mapValue(g, "reference")
			if ref == nil {
				ref = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
				setNode(g, "reference", ref)
			}
			removeName(ref, q)
			ref.Content = append(ref.Content, k)
			continue
		}
		return fmt.Errorf("table %s is not in the target group", q)
	}
	return nil
}

// nameAt is the qualified name of a table key (a mapping's key or a
// sequence's item).
func nameAt(n *yaml.Node) (topology.QualifiedName, bool) {
	q, err := topology.ParseQualifiedName(n.Value)
	return q, err == nil && n.Kind == yaml.ScalarNode
}

// findName finds table q in a mapping (key and value) or a sequence
// (item, nil).
func findName(list *yaml.Node, q topology.QualifiedName) (key, value *yaml.Node) {
	if list == nil {
		return nil, nil
	}
	step := 1
	if list.Kind == yaml.MappingNode {
		step = 2
	}
	for i := 0; i < len(list.Content); i += step {
		if got, ok := nameAt(list.Content[i]); ok && got == q {
			if step == 2 {
				return list.Content[i], list.Content[i+1]
			}
			return list.Content[i], nil
		}
	}
	return nil, nil
}

// removeName takes table q out of a mapping or a sequence.
func removeName(list *yaml.Node, q topology.QualifiedName) {
	if list == nil || (list.Kind != yaml.MappingNode && list.Kind != yaml.SequenceNode) {
		return
	}
	step := 1
	if list.Kind == yaml.MappingNode {
		step = 2
	}
	for i := 0; i < len(list.Content); i += step {
		if got, ok := nameAt(list.Content[i]); ok && got == q {
			list.Content = append(list.Content[:i], list.Content[i+step:]...)
			return
		}
	}
}

// mapValue is the value of key in mapping node m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func setScalar(m *yaml.Node, key, value string) {
	setNode(m, key, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
}

// setNode sets key of mapping m to v, keeping the key's comments.
func setNode(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v.LineComment = m.Content[i+1].LineComment
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
}
