package sqlerr

import (
	"errors"
	"fmt"
	"testing"
)

type foreign struct{ code string }

func (f foreign) Error() string    { return "foreign" }
func (f foreign) SQLState() string { return f.code }

func TestCode(t *testing.T) {
	base := New(InvalidTextRepresentation, "invalid input syntax for type %s: %q", "bigint", "abc")
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("plain"), InternalError},
		{base, "22P02"},
		{fmt.Errorf("shard -80: %w", base), "22P02"},
		{fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", base.WithHint("use digits"))), "22P02"},
		{fmt.Errorf("wrapped: %w", foreign{"23505"}), "23505"},
		{foreign{""}, InternalError},
	}
	for _, tc := range tests {
		if got := Code(tc.err); got != tc.want {
			t.Errorf("Code(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	if got, want := base.Error(), `invalid input syntax for type bigint: "abc" (SQLSTATE 22P02)`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	d := base.WithDetail("row %d", 3)
	if d.Detail != "row 3" || base.Detail != "" {
		t.Errorf("WithDetail must copy: %+v %+v", d, base)
	}
	if e, ok := As(fmt.Errorf("x: %w", d)); !ok || e != d {
		t.Errorf("As did not find the error")
	}
}
