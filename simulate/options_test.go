package simulate

import (
	"testing"
	"time"

	"github.com/preconf/preconf/internal/option"
)

// Validate refuses a negative timeout other than NoTimeout and an unknown
// state-root mode, naming the option; zero values and the "none" spellings
// pass, and New fills in the defaults.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		field string // "": valid
	}{
		{"zero: the defaults", Options{}, ""},
		{"no limits", Options{GasCap: NoGasCap, Timeout: NoTimeout}, ""},
		{"compute roots", Options{Roots: RootCompute}, ""},
		{"negative timeout", Options{Timeout: -time.Second}, "timeout"},
		{"unknown state-root mode", Options{Roots: RootCompute + 1}, "state-root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if !option.Names(err, tc.field) {
				t.Fatalf("error %v, want one naming %q (\"\": none)", err, tc.field)
			}
			_, newErr := New(nil, nil, tc.opts)
			if (newErr != nil) != (tc.field != "") {
				t.Fatalf("New's error %v, Validate's %v", newErr, err)
			}
		})
	}
	e, err := New(nil, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Options(); got != DefaultOptions() {
		t.Fatalf("zero options run as %+v, want the defaults %+v", got, DefaultOptions())
	}
}
