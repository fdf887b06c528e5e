package admin

import (
	"errors"
	"io"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// ParameterStatus are the parameters the console reports at start-up.
var ParameterStatus = []pgproto3.ParameterStatus{
	{Name: "client_encoding", Value: "UTF8"},
	{Name: "DateStyle", Value: "ISO, MDY"},
	{Name: "integer_datetimes", Value: "on"},
	{Name: "server_encoding", Value: "UTF8"},
	{Name: "server_version", Value: "15.0 (shardgate admin console)"},
	{Name: "standard_conforming_strings", Value: "on"},
}

// console is one admin connection after its start-up.
type console struct {
	src   Source
	be    *pgproto3.Backend
	log   *slog.Logger
	user  string
	stmts map[string]string // prepared statement name → command text
	ports map[string]string // portal name → command text
}

// Serve runs the console for an authenticated admin user, reading from r
// and writing to w: it ends the start-up (AuthenticationOk,
// ParameterStatus, ReadyForQuery) and answers until the client terminates
// or the connection fails.
func Serve(src Source, r io.Reader, w io.Writer, log *slog.Logger, user string) error {
	c := &console{src: src, be: pgproto3.NewBackend(r, w), log: log, user: user, stmts: map[string]string{}, ports: map[string]string{}}
	log.Info("admin console opened", "user", user)
	defer log.Info("admin console closed", "user", user)
	c.be.Send(&pgproto3.AuthenticationOk{})
	for i := range ParameterStatus {
		c.be.Send(&ParameterStatus[i])
	}
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	skip := false // an extended-protocol error: ignore messages until Sync
	for {
		if err := c.be.Flush(); err != nil {
			return err
		}
		msg, err := c.be.Receive()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.Terminate:
			return nil
		case *pgproto3.Query:
			c.simple(m.String)
			c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		case *pgproto3.Sync:
			skip = false
			c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		case *pgproto3.Flush:
		default:
			if skip {
				continue
			}
			if err := c.extended(msg); err != nil {
				c.sendError(err)
				skip = true
			}
		}
	}
}

func (c *console) sendError(err error) {
	c.be.Send(pgwire.ErrorResponse(err, "ERROR"))
}

// simple runs a Query message: its commands, separated by semicolons, in
// turn until one fails.
func (c *console) simple(text string) {
	cmds := splitCommands(text)
	if len(cmds) == 0 {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
		return
	}
	for _, t := range cmds {
		if err := c.run(t, true); err != nil {
			c.sendError(err)
			return
		}
	}
}

// extended answers one extended-protocol message.
func (c *console) extended(msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Parse:
		cmds := splitCommands(m.Query)
		if len(cmds) > 1 {
			return sqlerr.New("42601", "cannot insert multiple commands into a prepared statement")
		}
		text := ""
		if len(cmds) == 1 {
			text = cmds[0]
		}
		if _, err := parse(text); text != "" && err != nil {
			return err
		}
		c.stmts[m.Name] = text
		c.be.Send(&pgproto3.ParseComplete{})
	case *pgproto3.Bind:
		text, ok := c.stmts[m.PreparedStatement]
		if !ok {
			return sqlerr.New("26000", "prepared statement \"%s\" does not exist", m.PreparedStatement)
		}
		if len(m.Parameters) > 0 {
			return sqlerr.New("08P01", "bind message supplies %d parameters, but prepared statement \"%s\" requires 0", len(m.Parameters), m.PreparedStatement)
		}
		c.ports[m.DestinationPortal] = text
		c.be.Send(&pgproto3.BindComplete{})
	case *pgproto3.Describe:
		text, ok := c.ports[m.Name]
		if m.ObjectType == 'S' {
			text, ok = c.stmts[m.Name]
		}
		if !ok {
			return sqlerr.New("26000", "%c \"%s\" does not exist", m.ObjectType, m.Name)
		}
		if m.ObjectType == 'S' {
			c.be.Send(&pgproto3.ParameterDescription{})
		}
		cmd, err := parse(text)
		if err != nil {
			return err
		}
		if cols := cmd.columns(); len(cols) > 0 {
			c.be.Send(rowDescription(cols))
		} else {
			c.be.Send(&pgproto3.NoData{})
		}
	case *pgproto3.Execute:
		text, ok := c.ports[m.Portal]
		if !ok {
			return sqlerr.New("34000", "portal \"%s\" does not exist", m.Portal)
		}
		if text == "" {
			c.be.Send(&pgproto3.EmptyQueryResponse{})
			return nil
		}
		return c.run(text, false)
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			delete(c.stmts, m.Name)
		} else {
			delete(c.ports, m.Name)
		}
		c.be.Send(&pgproto3.CloseComplete{})
	default:
		return sqlerr.New("08P01", "unexpected message %T on the admin console", msg)
	}
	return nil
}

// run parses and runs one command and sends its answer; describe sends
// the RowDescription first (the simple protocol).
func (c *console) run(text string, describe bool) error {
	cmd, err := parse(text)
	if err != nil {
		return err
	}
	res, err := cmd.exec(c)
	if err != nil {
		return err
	}
	if cols := cmd.columns(); len(cols) > 0 {
		if describe {
			c.be.Send(rowDescription(cols))
		}
		for _, r := range res.rows {
			if cmd.like != nil && !res.filtered && !cmd.like.match(r[0]) {
				continue
			}
			c.be.Send(dataRow(r))
			res.n++
		}
	}
	tag := res.tag
	if tag == "" {
		tag = "SHOW"
	}
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
	return nil
}

// textOID is the type of every column the console returns.
const textOID = 25

func rowDescription(cols []string) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{}
	for _, name := range cols {
		rd.Fields = append(rd.Fields, pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: textOID, DataTypeSize: -1, TypeModifier: -1})
	}
	return rd
}

func dataRow(r []*string) *pgproto3.DataRow {
	d := &pgproto3.DataRow{Values: make([][]byte, len(r))}
	for i, v := range r {
		if v != nil {
			d.Values[i] = []byte(*v)
		}
	}
	return d
}

// splitCommands cuts a Query's text at semicolons outside quotes and
// drops empty commands.
func splitCommands(text string) []string {
	var out []string
	start, quote := 0, byte(0)
	for i := 0; i <= len(text); i++ {
		if i < len(text) {
			ch := text[i]
			switch {
			case quote != 0:
				if ch == quote {
					quote = 0
				}
				continue
			case ch == '\'' || ch == '"':
				quote = ch
				continue
			case ch != ';':
				continue
			}
		}
		if t := strings.TrimSpace(text[start:i]); t != "" {
			out = append(out, t)
		}
		start = i + 1
	}
	return out
}
