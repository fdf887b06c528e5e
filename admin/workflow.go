package admin

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/workflows"
)

// workflowLineCols is the one column of a WORKFLOW command's answer.
var workflowLineCols = []string{"line"}

// parseWorkflow reads WORKFLOW SWITCH id [DRY_RUN], WORKFLOW REVERSE id
// [DRY_RUN], WORKFLOW COMPLETE id [KEEP_DATA] (words[0] is WORKFLOW).
func parseWorkflow(cmd *command, words []string, text string) (*command, error) {
	if len(words) < 3 || len(words) > 4 || cmd.like != nil {
		return nil, syntaxError(text)
	}
	cmd.target = strings.ToUpper(words[1])
	cmd.arg = words[2]
	opt := ""
	if len(words) == 4 {
		opt = strings.ToUpper(words[3])
	}
	switch {
	case (cmd.target == "SWITCH" || cmd.target == "REVERSE") && (opt == "" || opt == "DRY_RUN"),
		cmd.target == "COMPLETE" && (opt == "" || opt == "KEEP_DATA"):
	case cmd.target == "SWITCH" && opt == "READS_ONLY":
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "switching reads without writes is not supported: the proxy routes a table's reads and writes with one layout")
	default:
		return nil, syntaxError(text)
	}
	if id, err := strconv.ParseInt(cmd.arg, 10, 64); err != nil || id <= 0 {
		return nil, sqlerr.New("22023", "workflow id must be a positive number, not %q", cmd.arg)
	}
	cmd.opt = opt
	return cmd, nil
}

// workflow runs a WORKFLOW command against the workflows recorded in main
// (package workflows); its answer is the lines `shardgate workflow` prints.
func (c *console) workflow(cmd *command) (result, error) {
	id, _ := strconv.ParseInt(cmd.arg, 10, 64)
	r := c.src.Routing()
	main := r.Topology.Main()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, err := workflows.OpenStore(ctx, r.Topology.Cluster(main.Cluster).DSN)
	if err != nil {
		return result{}, err
	}
	defer store.Close()
	c.log.Info("admin console: WORKFLOW", "user", c.user, "command", cmd.target, "workflow", id, "option", cmd.opt)
	var text string
	switch cmd.target {
	case "COMPLETE":
		var edit []byte
		edit, err = workflows.Complete(ctx, store, id, workflows.CompleteOptions{KeepData: cmd.opt == "KEEP_DATA", File: r.File})
		text = "workflow " + cmd.arg + " completed\n"
		if edit != nil {
			text = "the topology file to write:\n" + string(edit)
		}
	default:
		o := workflows.SwitchOptions{Author: "admin console (" + c.user + ")", DryRun: cmd.opt == "DRY_RUN"}
		var rec *workflows.SwitchRecord
		if cmd.target == "SWITCH" {
			rec, err = workflows.Switch(ctx, store, id, o)
		} else {
			rec, err = workflows.Reverse(ctx, store, id, o)
		}
		if rec != nil {
			text = rec.Text()
		}
	}
	if err != nil {
		return result{}, err
	}
	var rows [][]*string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		rows = append(rows, []*string{str(l)})
	}
	return result{rows: rows, tag: "WORKFLOW"}, nil
}
