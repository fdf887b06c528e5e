package proxy

import (
	"strings"

	"github.com/shardgate/shardgate/sessionstate"
)

// The settings that shape the text of values a merge reads or writes:
// the reported ones from the session's parameters, the others from its
// settings with the transaction's SET LOCAL values over them.
var (
	outputParamNames   = []string{"DateStyle", "IntervalStyle", "TimeZone", "client_encoding"}
	outputSettingNames = []string{"extra_float_digits", "bytea_output", "lc_monetary", "lc_numeric"}
)

// localSettings are the session's settings with the open transaction's
// SET LOCAL values of outputSettingNames over them.
func (ss *session) localSettings() sessionstate.Settings {
	s := sessionstate.Settings(ss.settings)
	if ss.tx == nil {
		return s
	}
	return s.WithLocal(&ss.tx.replay, outputSettingNames...)
}

// outputSettings is a key of the session's output settings now
// (merge.Exec.Output).
func (ss *session) outputSettings() string {
	var b strings.Builder
	for _, p := range outputParamNames {
		b.WriteString(ss.params[p])
		b.WriteByte(0)
	}
	local := ss.localSettings()
	for _, s := range outputSettingNames {
		b.WriteString(local[s])
		b.WriteByte(0)
	}
	return b.String()
}
