package pgwire

import (
	"encoding/binary"
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

// TagSum sums the command tags of one statement run on several backends
// ("UPDATE 3" and "UPDATE 4" make "UPDATE 7"); a tag without a count is
// kept as is.
type TagSum struct {
	verb, prefix string
	count        int64
	// Any is set once a tag was added.
	Any bool
}

// Add sums one CommandComplete body in.
func (t *TagSum) Add(body []byte) {
	t.Any = true
	prefix, n, ok := SplitTag(body)
	if !ok {
		t.verb = prefix
		return
	}
	t.prefix = prefix
	t.count += n
}

// Tag is the summed tag.
func (t *TagSum) Tag() string {
	if t.prefix != "" {
		return t.prefix + " " + strconv.FormatInt(t.count, 10)
	}
	return t.verb
}

// TagRows is the row count of a CommandComplete body ("SELECT 5", "INSERT
// 0 5", NUL-terminated or not); 0 for a tag without one ("BEGIN").
func TagRows(body []byte) int64 {
	end := len(body)
	for end > 0 && body[end-1] == 0 {
		end--
	}
	var n, mul int64 = 0, 1
	i := end - 1
	for ; i >= 0 && body[i] >= '0' && body[i] <= '9'; i-- {
		if mul > 1e17 {
			return 0
		}
		n += int64(body[i]-'0') * mul
		mul *= 10
	}
	if i == end-1 || i < 0 || body[i] != ' ' {
		return 0
	}
	return n
}

// RunTagRows sums TagRows over the CommandComplete messages of msgs, whole
// messages in wire form.
func RunTagRows(msgs []byte) int64 {
	var n int64
	for len(msgs) >= 5 {
		l := int(binary.BigEndian.Uint32(msgs[1:5])) + 1
		if l < 5 || l > len(msgs) {
			break
		}
		if msgs[0] == 'C' {
			n += TagRows(msgs[5:l])
		}
		msgs = msgs[l:]
	}
	return n
}
