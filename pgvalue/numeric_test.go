package pgvalue

import (
	"math/big"
	"sync"
	"testing"
)

// TestPow10Concurrent: merges of many sessions do numeric arithmetic at
// once, so the powers of ten pow10 hands out must be safe to share. Run
// with -race (it runs before the other tests of the package, while no
// power has been asked for yet).
func TestPow10Concurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 80; n++ {
				want := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
				if got := pow10(n); got.Cmp(want) != 0 {
					t.Errorf("pow10(%d) = %v", n, got)
				}
			}
			// The same through the arithmetic merges use.
			d, err := ParseNumeric("12.5e3")
			if err != nil {
				t.Error(err)
				return
			}
			if got := string(d.Div(DecimalFromInt(7)).AppendText(nil)); got != "1785.7142857142857143" {
				t.Errorf("12500 / 7 = %s", got)
			}
		}()
	}
	wg.Wait()
}
