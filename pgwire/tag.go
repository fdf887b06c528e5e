package pgwire

import (
	"strconv"
	"strings"
)

// SplitTag splits a CommandComplete body ("INSERT 0 5", "COPY 3") into what
// precedes its row count and the count; ok is false for a tag without one
// ("BEGIN"), whose prefix is then the whole tag.
func SplitTag(body []byte) (prefix string, n int64, ok bool) {
	tag := strings.TrimRight(string(body), "\x00")
	i := strings.LastIndexByte(tag, ' ')
	if i < 0 {
		return tag, 0, false
	}
	n, err := strconv.ParseInt(tag[i+1:], 10, 64)
	if err != nil {
		return tag, 0, false
	}
	return tag[:i], n, true
}
