package conformance

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Shape returns "" when got has want's shape, as rpc-compat checks the
// "speconly" fixtures: a result where want has a result and an error where
// it has an error, and every member of want present in got with the same
// JSON type, at every depth (arrays by their first element). Values are not
// compared, and got may have members want lacks.
func Shape(want, got []byte) string {
	w, g, bad := decodeBoth(want, got)
	if bad != "" {
		return bad
	}
	wm, ok1 := w.(map[string]any)
	gm, ok2 := g.(map[string]any)
	if !ok1 || !ok2 {
		return "$ is not an object"
	}
	for _, k := range []string{"result", "error"} {
		wv, wok := wm[k]
		gv, gok := gm[k]
		switch {
		case wok && !gok:
			return fmt.Sprintf("$.%s missing (the answer is %s)", k, short(g))
		case !wok && gok:
			return fmt.Sprintf("$.%s unexpected (%s)", k, short(gv))
		case wok:
			if d := shape(wv, gv, "$."+k); d != "" {
				return d
			}
		}
	}
	return ""
}

func shape(want, got any, path string) string {
	if kw, kg := kind(want), kind(got); kw != kg {
		return fmt.Sprintf("%s is %s (%s), want %s", path, kg, short(got), kw)
	}
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s missing (want %s)", path, k, short(w[k]))
			}
			if d := shape(w[k], gv, path+"."+k); d != "" {
				return d
			}
		}
	case []any:
		if g := got.([]any); len(w) > 0 && len(g) > 0 {
			return shape(w[0], g[0], path+"[0]")
		}
	}
	return ""
}

// kind names a decoded JSON value's type.
func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
