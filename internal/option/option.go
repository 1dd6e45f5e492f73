// Package option holds what a package's configuration check (its
// Config.Validate) returns for a value it refuses: a FieldError naming the
// option, so that one check serves the command line, which names its flag,
// and Go callers, who name the field.
package option

import (
	"errors"
	"fmt"
)

// FieldError is a configuration value a package refuses. Field is the
// option's name as the package spells it ("approval-timeout", "gas-cap",
// …); the command line maps it to its flag.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Msg }

// Errorf is a FieldError for field with a formatted message.
func Errorf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Names reports whether err names field: a FieldError of that option, or
// no error at all for field "".
func Names(err error, field string) bool {
	var fe *FieldError
	if field == "" {
		return err == nil
	}
	return errors.As(err, &fe) && fe.Field == field
}
