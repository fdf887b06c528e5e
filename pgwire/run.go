package pgwire

import "encoding/binary"

// TypeSet is a set of message types (the letters 'A' to 'z' the protocol
// uses), for Reader.Run.
type TypeSet uint64

// Types is the set of the given message types.
func Types(types string) TypeSet {
	var s TypeSet
	for i := 0; i < len(types); i++ {
		s = s.With(types[i])
	}
	return s
}

// With is s and typ.
func (s TypeSet) With(typ byte) TypeSet {
	if typ < 'A' || typ > 'z' {
		return s
	}
	return s | 1<<(typ-'A')
}

// Without is s but typ.
func (s TypeSet) Without(typ byte) TypeSet {
	if typ < 'A' || typ > 'z' {
		return s
	}
	return s &^ (1 << (typ - 'A'))
}

// Has says whether typ is in s.
func (s TypeSet) Has(typ byte) bool {
	return typ >= 'A' && typ <= 'z' && s&(1<<(typ-'A')) != 0
}

// Run returns the run of complete messages at the head of what is read
// and buffered already whose types are all in pass, in wire form (type,
// length, body: ready to be written on as they are), without reading
// from the connection and without a copy. It stops at the first message
// not in pass, at a message not complete in the buffer, and at the end of
// the buffer; the run is empty when the next message is not one of them
// (then Next reads it). Like a message Next returns, the run is valid
// until the next call. A relay uses it to pass on whole runs of rows in
// one copy, looking only at their headers.
func (m *Reader) Run(pass TypeSet) []byte {
	if m.pending > 0 {
		_, _ = m.r.Discard(m.pending) // buffered: cannot fail
		m.pending = 0
	}
	avail := m.r.Buffered()
	if avail < 5 {
		return nil
	}
	buf, _ := m.r.Peek(avail) // buffered: cannot fail
	end := 0
	for end+5 <= len(buf) {
		n := int(binary.BigEndian.Uint32(buf[end+1:]))
		if !pass.Has(buf[end]) || n < 4 || end+1+n > len(buf) {
			break
		}
		end += 1 + n
	}
	m.pending = end
	return buf[:end]
}
