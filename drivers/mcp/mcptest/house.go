package mcptest

// The fake house and what Home Assistant does with a tool call to it:
// the intent tools' slot checks, target matching and answers
// (helpers/intent.py, components/intent, components/light/intent.py) and
// GetLiveContext (helpers/llm.py). See tools.go for the files and commits.

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// The MCP server's LLM context names the conversation integration as the
// assistant (mcp_server/http.py: assistant=conversation.DOMAIN).
const assistant = "conversation"

type area struct{ id, name string }

var areas = []area{{"kitchen", "Kitchen"}, {"living_room", "Living Room"}}

type entity struct {
	id, name, area string // area is the area id
	deviceClass    string
	on             bool
	brightness     int   // HA's 0..255 attribute
	rgb            []int // last rgb_color set, nil if none
	kelvin         int   // last color_temp_kelvin set, 0 if none
}

func (e *entity) domain() string { return e.id[:strings.IndexByte(e.id, '.')] }

type house struct {
	entities []*entity // in the order HA's state machine holds them
}

func newHouse() *house {
	return &house{entities: []*entity{
		{id: "light.kitchen", name: "Kitchen Light", area: "kitchen", brightness: 255},
		{id: "light.living_room", name: "Living Room Light", area: "living_room", brightness: 255},
		{id: "switch.coffee", name: "Coffee Maker", area: "kitchen", deviceClass: "outlet"},
	}}
}

func (h *house) entity(id string) *entity {
	for _, e := range h.entities {
		if e.id == id {
			return e
		}
	}
	return nil
}

func normalize(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func findArea(name string) *area {
	for i := range areas {
		if areas[i].id == name || normalize(areas[i].name) == normalize(name) {
			return &areas[i]
		}
	}
	return nil
}

// callError is a failure server.py reports as "Error calling tool: ...".
func callError(msg string) toolAnswer {
	return toolAnswer{text: "Error calling tool: " + msg, isError: true}
}

type toolAnswer struct {
	text    string
	isError bool
}

// Match failure reasons, numbered as auto() numbers them in
// intent.MatchFailedReason.
var reasonNumber = map[string]int{
	"NAME": 1, "AREA": 2, "FLOOR": 3, "DOMAIN": 4, "DEVICE_CLASS": 5,
	"FEATURE": 6, "STATE": 7, "ASSISTANT": 8, "INVALID_AREA": 9,
	"INVALID_FLOOR": 10, "DUPLICATE_NAME": 11,
}

type constraints struct {
	name, area, floor *string
	domains           []string // nil: none given
	deviceClasses     []string
}

func (c constraints) has() bool {
	return (c.name != nil && *c.name != "") || (c.area != nil && *c.area != "") ||
		(c.floor != nil && *c.floor != "") || len(c.domains) > 0 || len(c.deviceClasses) > 0
}

type matchResult struct {
	ok          bool
	reason      string
	noMatchName *string
	states      []*entity
	areas       []*area
}

func (r matchResult) repr() string {
	reason := "None"
	if !r.ok {
		reason = fmt.Sprintf("<MatchFailedReason.%s: %d>", r.reason, reasonNumber[r.reason])
	}
	okRepr := "False"
	if r.ok {
		okRepr = "True"
	}
	var as []string
	for _, a := range r.areas {
		// AreaEntry's repr, approximated from helpers/area_registry.py.
		as = append(as, fmt.Sprintf("AreaEntry(name=%s, normalized_name=%s, aliases=set(), floor_id=None, icon=None, id=%s, labels=set(), picture=None)",
			pyStr(a.name), pyStr(normalize(a.name)), pyStr(a.id)))
	}
	return fmt.Sprintf("MatchTargetsResult(is_match=%s, no_match_reason=%s, states=[], no_match_name=%s, areas=[%s], floors=[])",
		okRepr, reason, pyOptStr(r.noMatchName), strings.Join(as, ", "))
}

// matchFailed is str(MatchFailedError(...)) as intent.py renders it; the
// constraints' fields are those of a 2025.9 HA's answer (single_target
// included).
func matchFailed(r matchResult, c constraints, withAssistant bool) string {
	asst := "None"
	if withAssistant {
		asst = pyStr(assistant)
	}
	cons := fmt.Sprintf("MatchTargetsConstraints(name=%s, area_name=%s, floor_name=%s, domains=%s, device_classes=%s, features=None, states=None, assistant=%s, allow_duplicate_names=False, single_target=False)",
		pyOptStr(c.name), pyOptStr(c.area), pyOptStr(c.floor), pySet(c.domains), pySet(c.deviceClasses), asst)
	return fmt.Sprintf("<MatchFailedError result=%s, constraints=%s, preferences=MatchTargetsPreferences(area_id=None, floor_id=None)>",
		r.repr(), cons)
}

// match is intent.async_match_targets over the fake house (every entity
// exposed; no floors, aliases or devices). states, when given, is the
// candidate list (GetLiveContext passes the exposed ones); otherwise the
// state machine filtered by domain.
func (h *house) match(c constraints, states []*entity) matchResult {
	filteredByDomain := false
	if len(states) == 0 {
		for _, e := range h.entities {
			if len(c.domains) == 0 || contains(c.domains, e.domain()) {
				states = append(states, e)
			}
		}
		filteredByDomain = true
		if len(states) == 0 {
			return matchResult{reason: "DOMAIN"}
		}
	}
	cands := states
	if len(c.domains) > 0 && !filteredByDomain {
		cands = filter(cands, func(e *entity) bool { return contains(c.domains, e.domain()) })
		if len(cands) == 0 {
			return matchResult{reason: "DOMAIN"}
		}
	}
	name, areaName, floor := deref(c.name), deref(c.area), deref(c.floor)
	if name == "" && len(c.deviceClasses) == 0 && areaName == "" && floor == "" {
		return matchResult{ok: true, states: cands}
	}
	if name != "" {
		cands = filter(cands, func(e *entity) bool { return e.id == name || normalize(e.name) == normalize(name) })
		if len(cands) == 0 {
			return matchResult{reason: "NAME"}
		}
	}
	if len(c.deviceClasses) > 0 {
		cands = filter(cands, func(e *entity) bool { return e.deviceClass != "" && contains(c.deviceClasses, e.deviceClass) })
		if len(cands) == 0 {
			return matchResult{reason: "DEVICE_CLASS"}
		}
	}
	var targeted []*area
	if floor != "" {
		// The fake house has no floors.
		return matchResult{reason: "INVALID_FLOOR", noMatchName: &floor}
	}
	if areaName != "" {
		a := findArea(areaName)
		if a == nil {
			return matchResult{reason: "INVALID_AREA", noMatchName: &areaName}
		}
		targeted = []*area{a}
		cands = filter(cands, func(e *entity) bool { return e.area == a.id })
		if len(cands) == 0 {
			return matchResult{reason: "AREA", areas: targeted}
		}
	}
	return matchResult{ok: true, states: cands, areas: targeted}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func filter(es []*entity, keep func(*entity) bool) []*entity {
	var out []*entity
	for _, e := range es {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// colors is a few of util/color.py's COLORS (CSS names), enough for tests.
var colors = map[string][]int{
	"red": {255, 0, 0}, "green": {0, 128, 0}, "blue": {0, 0, 255},
	"white": {255, 255, 255}, "yellow": {255, 255, 0}, "orange": {255, 165, 0},
	"purple": {128, 0, 128}, "pink": {255, 192, 203}, "cyan": {0, 255, 255},
	"magenta": {255, 0, 255}, "warmwhite": {253, 245, 230},
}

// intent runs HassTurnOn, HassTurnOff or HassLightSet as
// DynamicServiceIntentHandler.async_handle does, with args already past
// the JSON Schema check.
func (h *house) intent(tool string, args *obj) toolAnswer {
	invalid := callError("Received invalid slot info for " + tool)
	str := func(k string) *string {
		v, ok := args.get(k)
		if !ok {
			return nil
		}
		s := v.(string)
		return &s
	}
	strs := func(k string) []string {
		v, ok := args.get(k)
		if !ok {
			return nil
		}
		out := []string{}
		for _, x := range v.([]any) {
			if !contains(out, x.(string)) {
				out = append(out, x.(string))
			}
		}
		return out
	}

	// Slot validation: name, area and floor must be non-empty strings
	// (intent.non_empty_string); an unknown slot is let through
	// (extra=vol.ALLOW_EXTRA).
	var c constraints
	for _, k := range []string{"name", "area", "floor"} {
		if s := str(k); s != nil && strings.TrimSpace(*s) == "" {
			return invalid
		}
	}
	c.name, c.area, c.floor = str("name"), str("area"), str("floor")
	if c.name != nil && *c.name == "all" {
		c.name = nil // "all" targets everything the other slots allow
	}
	if tool == toolLightSet {
		c.domains = []string{"light"} // required_domains
	}
	if _, ok := args.get("domain"); ok {
		c.domains = strs("domain")
	}
	if _, ok := args.get("device_class"); ok {
		c.deviceClasses = strs("device_class")
	}
	var rgb []int
	var kelvin, pct int = 0, -1
	if tool == toolLightSet {
		if s := str("color"); s != nil {
			v, ok := colors[strings.ToLower(strings.ReplaceAll(*s, " ", ""))]
			if !ok {
				return invalid // color_name_to_rgb: Unknown color
			}
			rgb = v
		}
		if v, ok := args.get("temperature"); ok {
			kelvin = numInt(v)
		}
		if v, ok := args.get("brightness"); ok {
			pct = numInt(v)
		}
	}

	if !c.has() {
		return callError("Service handler cannot target all devices")
	}
	r := h.match(c, nil)
	if !r.ok {
		return callError(matchFailed(r, c, true))
	}

	success := []any{}
	for _, a := range r.areas {
		success = append(success, o("name", a.name, "type", "area", "id", a.id))
	}
	for _, e := range r.states {
		switch tool {
		case toolTurnOn:
			e.on = true
		case toolTurnOff:
			e.on = false
		case toolLightSet:
			// light.turn_on: brightness_pct becomes round(pct * 255 / 100),
			// and a brightness of 0 turns the light off.
			e.on = true
			if rgb != nil {
				e.rgb, e.kelvin = rgb, 0
			}
			if kelvin > 0 {
				e.kelvin, e.rgb = kelvin, nil
			}
			if pct >= 0 {
				b := int(math.RoundToEven(float64(pct) * 255 / 100))
				if b == 0 {
					e.on = false
				} else {
					e.brightness = b
				}
			}
		}
		success = append(success, o("name", e.name, "type", "entity", "id", e.id))
	}
	resp := o(
		"speech", newObj(),
		"response_type", "action_done",
		"data", o("targets", []any{}, "success", success, "failed", []any{}),
	)
	return toolAnswer{text: pyDumps(resp)}
}

func numInt(v any) int {
	f, _ := v.(json.Number).Float64()
	return int(f)
}

// liveContext is GetLiveContextTool.async_call.
func (h *house) liveContext(args *obj) toolAnswer {
	// self.parameters(tool_input.tool_args): a vol.Schema without
	// extra=ALLOW_EXTRA, so an unknown argument is refused.
	var name, areaName *string
	var domains []string
	domainGiven := false
	for _, k := range args.keys {
		v := args.vals[k]
		switch k {
		case "name", "area":
			s := v.(string) // the JSON Schema check made sure
			if k == "name" {
				name = &s
			} else {
				areaName = &s
			}
		case "domain":
			// vol.Any(cv.string, [cv.string]); the schema's {} branch lets
			// anything through to here.
			domainGiven = true
			switch t := v.(type) {
			case []any:
				for i, x := range t {
					s, err := cvString(x)
					if err != "" {
						return callError(fmt.Sprintf("%s @ data['domain'][%d]", err, i))
					}
					domains = append(domains, s)
				}
			default:
				s, err := cvString(t)
				if err != "" {
					return callError(err + " for dictionary value @ data['domain']")
				}
				domains = []string{s}
			}
		default:
			return callError("extra keys not allowed @ data[" + pyStr(k) + "]")
		}
	}
	if domainGiven {
		var norm []string
		for _, d := range domains {
			if d = strings.ToLower(strings.TrimSpace(d)); d != "" {
				norm = append(norm, d)
			}
		}
		domains = norm
	}

	entities := h.entities
	if deref(name) != "" || deref(areaName) != "" || len(domains) > 0 {
		c := constraints{name: name, area: areaName, domains: domains}
		r := h.match(c, h.entities)
		if !r.ok {
			var msg string
			switch r.reason {
			case "INVALID_AREA":
				msg = fmt.Sprintf("Area '%s' does not exist", *r.noMatchName)
			case "NAME":
				msg = fmt.Sprintf("No exposed entities matched name '%s'", deref(name))
			case "AREA":
				msg = fmt.Sprintf("No exposed entities found in area '%s'", deref(areaName))
			case "DOMAIN":
				msg = "No exposed entities found in domain(s): " + strings.Join(domains, ", ")
			default:
				msg = "No entities matched the provided filter"
			}
			return toolAnswer{text: pyDumps(o("success", false, "error", msg))}
		}
		entities = r.states
	}
	text := "Live Context: An overview of the areas and the devices in this smart home:\n" +
		yamlDumpList(h.overview(entities))
	return toolAnswer{text: pyDumps(o("success", true, "result", text))}
}

// cvString is config_validation.string: anything but None, a list or a
// dict becomes its str().
func cvString(v any) (string, string) {
	switch t := v.(type) {
	case nil:
		return "", "string value is None"
	case []any, *obj:
		return "", "value should be a string"
	case string:
		return t, ""
	case bool:
		if t {
			return "True", ""
		}
		return "False", ""
	case json.Number:
		return pyNum(t), ""
	}
	return fmt.Sprint(v), ""
}

// overview is _get_exposed_entities(include_state=True) for the given
// entities: sorted by name, with names, domain, state, areas and the
// interesting attributes (brightness as str(int), None when off).
func (h *house) overview(es []*entity) []*obj {
	sorted := append([]*entity(nil), es...)
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j].name < sorted[j-1].name; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	var out []*obj
	for _, e := range sorted {
		state := "off"
		if e.on {
			state = "on"
		}
		info := o("names", e.name, "domain", e.domain(), "state", state)
		for _, a := range areas {
			if a.id == e.area {
				info.set("areas", a.name)
			}
		}
		attrs := newObj()
		if e.domain() == "light" {
			if e.on {
				attrs.set("brightness", fmt.Sprint(e.brightness))
			} else {
				attrs.set("brightness", nil)
			}
		}
		if e.deviceClass != "" {
			attrs.set("device_class", e.deviceClass)
		}
		if len(attrs.keys) > 0 {
			info.set("attributes", attrs)
		}
		out = append(out, info)
	}
	return out
}
