package mcptest

// Before a tool runs, Home Assistant's MCP server (the Python MCP SDK 1.x,
// lowlevel Server.call_tool with validate_input=True) checks the arguments
// with jsonschema.validate against the inputSchema it listed, and answers a
// failure as a tool result with isError set and the text
// "Input validation error: <jsonschema's message>". This is the subset of
// that check the fake's schemas need (type, enum, minimum, maximum, items,
// anyOf, properties), with jsonschema's wording and its best_match choice:
// the shallowest error wins, the first one met among equals.

import (
	"encoding/json"
	"math"
	"strconv"
)

type schemaError struct {
	depth   int
	weak    bool // anyOf/oneOf: best_match ranks these lower
	message string
}

// validateArgs returns jsonschema's message for the best error, or "".
func validateArgs(schema *obj, instance any) string {
	var errs []schemaError
	check(schema, instance, 0, &errs)
	if len(errs) == 0 {
		return ""
	}
	best := errs[0]
	for _, e := range errs[1:] {
		if e.depth < best.depth || (e.depth == best.depth && best.weak && !e.weak) {
			best = e
		}
	}
	return best.message
}

func check(schema *obj, v any, depth int, errs *[]schemaError) {
	for _, kw := range schema.keys {
		arg := schema.vals[kw]
		switch kw {
		case "type":
			t := arg.(string)
			if !isType(v, t) {
				*errs = append(*errs, schemaError{depth: depth, message: pyRepr(v) + " is not of type " + pyStr(t)})
			}
		case "enum":
			allowed := arg.([]any)
			ok := false
			for _, a := range allowed {
				if jsonEqual(a, v) {
					ok = true
					break
				}
			}
			if !ok {
				*errs = append(*errs, schemaError{depth: depth, message: pyRepr(v) + " is not one of " + pyRepr(allowed)})
			}
		case "minimum", "maximum":
			n, ok := v.(json.Number)
			if !ok {
				continue
			}
			x, _ := n.Float64()
			lim, _ := arg.(json.Number).Float64()
			if kw == "minimum" && x < lim {
				*errs = append(*errs, schemaError{depth: depth, message: pyRepr(v) + " is less than the minimum of " + pyRepr(arg)})
			}
			if kw == "maximum" && x > lim {
				*errs = append(*errs, schemaError{depth: depth, message: pyRepr(v) + " is greater than the maximum of " + pyRepr(arg)})
			}
		case "items":
			arr, ok := v.([]any)
			if !ok {
				continue
			}
			for _, e := range arr {
				check(arg.(*obj), e, depth+1, errs)
			}
		case "properties":
			m, ok := v.(*obj)
			if !ok {
				continue
			}
			props := arg.(*obj)
			for _, p := range props.keys {
				if pv, ok := m.get(p); ok {
					check(props.vals[p].(*obj), pv, depth+1, errs)
				}
			}
		case "anyOf":
			passed := false
			for _, alt := range arg.([]any) {
				var sub []schemaError
				check(alt.(*obj), v, depth, &sub)
				if len(sub) == 0 {
					passed = true
					break
				}
			}
			if !passed {
				*errs = append(*errs, schemaError{depth: depth, weak: true, message: pyRepr(v) + " is not valid under any of the given schemas"})
			}
		}
	}
}

// isType is jsonschema's type check (draft 2020-12: 5.0 is an integer, a
// bool is not a number).
func isType(v any, t string) bool {
	switch t {
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		if !isFloat(n) {
			return true
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(*obj)
		return ok
	case "null":
		return v == nil
	}
	return true
}

func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, _ := strconv.ParseFloat(string(x), 64)
		fy, _ := strconv.ParseFloat(string(y), 64)
		return fx == fy
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false
}
