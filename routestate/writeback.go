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
// the file and main agree: each GSI's state, and each switched reshard's
// shards and the clusters they use (taken from the workflow's target
// topology). It edits the YAML tree, so comments and the order of keys
// stay. If the file cannot be written, it returns the edited text and
// the write error: the edit for the admin to make. The result is checked
// to load before it is written.
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
	for id, sw := range st.Switched {
		if !sw.Writes {
			continue
		}
		if sw.Kind != "reshard" {
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
		for _, k := range []string{"index", "shards"} {
			if v := mapValue(tg, k); v != nil {
				setNode(g, k, v)
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
