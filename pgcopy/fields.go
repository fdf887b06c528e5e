package pgcopy

import "fmt"

// Decoding the key fields of a text or csv line (CopyReadAttributesText,
// CopyReadAttributesCSV).

// maxKeyPos is the last field position the key needs.
func (s *Scanner) maxKeyPos() int {
	m := -1
	for _, p := range s.cfg.KeyPos {
		if p > m {
			m = p
		}
	}
	return m
}

func (s *Scanner) wanted(fieldno int) bool {
	for _, p := range s.cfg.KeyPos {
		if p == fieldno {
			return true
		}
	}
	return false
}

// missingField reports the first key field the line lacks.
func (s *Scanner) missingField(fields int) error {
	for i, p := range s.cfg.KeyPos {
		if p >= fields {
			e := s.dataErr(fmt.Sprintf("missing data for column \"%s\"", s.cfg.Names[i]), "")
			e.Line = s.line
			e.Column = s.cfg.Names[i]
			return e
		}
	}
	return nil
}

// textFields splits a text-format line (CopyReadAttributesText) up to the
// last key field and decodes the key fields.
func (s *Scanner) textFields(line []byte) error {
	last := s.maxKeyPos()
	s.scratch = s.scratch[:0]
	delim := s.cfg.Delim
	cur, fieldno := 0, 0
	for fieldno <= last {
		start, outStart := cur, len(s.scratch)
		want := s.wanted(fieldno)
		foundDelim := false
		end := cur
		for {
			end = cur
			if cur >= len(line) {
				break
			}
			c := line[cur]
			cur++
			if c == delim {
				foundDelim = true
				break
			}
			if c == '\\' {
				if cur >= len(line) {
					break // a backslash ending the line is dropped
				}
				c = line[cur]
				cur++
				switch {
				case c >= '0' && c <= '7':
					val := int(c - '0')
					if cur < len(line) && line[cur] >= '0' && line[cur] <= '7' {
						val = val<<3 + int(line[cur]-'0')
						cur++
						if cur < len(line) && line[cur] >= '0' && line[cur] <= '7' {
							val = val<<3 + int(line[cur]-'0')
							cur++
						}
					}
					c = byte(val & 0o377)
				case c == 'x':
					if cur < len(line) && isHexDigit(line[cur]) {
						val := hexValue(line[cur])
						cur++
						if cur < len(line) && isHexDigit(line[cur]) {
							val = val<<4 + hexValue(line[cur])
							cur++
						}
						c = byte(val & 0xff)
					}
				case c == 'b':
					c = '\b'
				case c == 'f':
					c = '\f'
				case c == 'n':
					c = '\n'
				case c == 'r':
					c = '\r'
				case c == 't':
					c = '\t'
				case c == 'v':
					c = '\v'
				}
			}
			if want {
				s.scratch = append(s.scratch, c)
			}
		}
		if want {
			raw := line[start:end]
			var f Field
			switch {
			case string(raw) == s.cfg.Null:
				f.Null = true
			case s.cfg.HasDefault && string(raw) == s.cfg.Default:
				f.Default = true
			}
			s.setKeyField(fieldno, f, outStart, len(s.scratch))
		}
		fieldno++
		if !foundDelim {
			break
		}
	}
	if fieldno <= last {
		return s.missingField(fieldno)
	}
	s.resolveValues()
	return nil
}

func isHexDigit(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

// setKeyField records a decoded key field whose value is scratch[from:to]
// (resolved by resolveValues once scratch stops growing).
func (s *Scanner) setKeyField(fieldno int, f Field, from, to int) {
	for i, p := range s.cfg.KeyPos {
		if p == fieldno {
			s.fields[i] = f
			s.spans[i] = [2]int{from, to}
		}
	}
}

func (s *Scanner) resolveValues() {
	for i := range s.fields {
		if s.fields[i].Null || s.fields[i].Default {
			s.fields[i].Value = nil
			continue
		}
		s.fields[i].Value = s.scratch[s.spans[i][0]:s.spans[i][1]]
	}
}

// csvFields splits a csv line (CopyReadAttributesCSV) up to the last key
// field and decodes the key fields, applying FORCE_NOT_NULL and
// FORCE_NULL as NextCopyFrom does.
func (s *Scanner) csvFields(line []byte) error {
	last := s.maxKeyPos()
	s.scratch = s.scratch[:0]
	delim, quote, escape := s.cfg.Delim, s.cfg.Quote, s.cfg.Escape
	cur, fieldno := 0, 0
	for fieldno <= last {
		start, outStart := cur, len(s.scratch)
		want := s.wanted(fieldno)
		foundDelim, sawQuote := false, false
		end := cur
	field:
		for {
			// Not in quote.
			for {
				end = cur
				if cur >= len(line) {
					break field
				}
				c := line[cur]
				cur++
				if c == delim {
					foundDelim = true
					break field
				}
				if c == quote {
					sawQuote = true
					break
				}
				if want {
					s.scratch = append(s.scratch, c)
				}
			}
			// In quote.
			for {
				end = cur
				if cur >= len(line) {
					e := s.dataErr("unterminated CSV quoted field", "")
					e.Line = s.line
					return e
				}
				c := line[cur]
				cur++
				if c == escape && cur < len(line) {
					if next := line[cur]; next == escape || next == quote {
						if want {
							s.scratch = append(s.scratch, next)
						}
						cur++
						continue
					}
				}
				if c == quote {
					break
				}
				if want {
					s.scratch = append(s.scratch, c)
				}
			}
		}
		if want {
			raw := line[start:end]
			var f Field
			switch {
			case !sawQuote && string(raw) == s.cfg.Null:
				f.Null = true
			case s.cfg.HasDefault && string(raw) == s.cfg.Default:
				f.Default = true
			}
			for i, p := range s.cfg.KeyPos {
				if p != fieldno {
					continue
				}
				switch {
				case f.Null && s.cfg.ForceNotNull[i]:
					// FORCE_NOT_NULL: the null string itself.
					f.Null = false
					s.scratch = append(s.scratch[:outStart], s.cfg.Null...)
				case !f.Null && !f.Default && s.cfg.ForceNull[i] && string(s.scratch[outStart:]) == s.cfg.Null:
					f.Null = true
				}
			}
			s.setKeyField(fieldno, f, outStart, len(s.scratch))
		}
		fieldno++
		if !foundDelim {
			break
		}
	}
	if fieldno <= last {
		return s.missingField(fieldno)
	}
	s.resolveValues()
	return nil
}
