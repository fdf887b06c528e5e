package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandHasHelp walks the command tree: every command and
// subcommand has a Short or Long description and an Example for --help.
func TestEveryCommandHasHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		n++
		if strings.TrimSpace(c.Short) == "" && strings.TrimSpace(c.Long) == "" {
			t.Errorf("%q has no Short or Long description", c.CommandPath())
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	if n < 8 {
		t.Errorf("walked %d commands, want at least 8 (root, version, topology, validate, show, explain, serve, demo)", n)
	}
	out, _, err := run("topology", "validate", "--help")
	if err != nil || !strings.Contains(out, "Examples:") {
		t.Errorf("topology validate --help: %v\n%s", err, out)
	}
}
