package mcptest

// The tools, as Home Assistant's MCP server lists them for its Assist API.
//
// Where each piece was copied from (home-assistant/core; the whole
// repository was too large to fetch here, so each file was read as one
// stored version, at the commit named):
//
//   - homeassistant/components/mcp_server/server.py @ 06acbfce67817c6ae5ddcdc381009072096e6268:
//     _format_tool sends inputSchema = {"type": "object", "properties":
//     voluptuous_openapi.convert(tool.parameters)["properties"]}, so no
//     "required" and no "additionalProperties"; call_tool answers
//     [TextContent(json.dumps(tool_response))] and turns a
//     HomeAssistantError or vol.Invalid into HomeAssistantError(
//     f"Error calling tool: {e}"), which the Python MCP SDK answers as a
//     result with isError (not a JSON-RPC error).
//   - homeassistant/helpers/llm.py @ 004be187e720f879eace3c615f55204519f21859:
//     IntentTool (description = the handler's; preferred_area_id and
//     preferred_floor_id dropped from the schema; arguments passed as slots),
//     IntentResponseDict (as_dict without "language" and "card"),
//     GetLiveContextTool (name, description, parameters, result) and
//     _get_exposed_entities (the YAML overview).
//   - homeassistant/helpers/intent.py @ be1fd4e79f39db953879359963febfcf19e0d7c3:
//     DynamicServiceIntentHandler.slot_schema (name/area/floor as
//     non_empty_string, domain as a list, device_class as a list of
//     vol.In), async_match_targets, MatchFailedError.__str__,
//     IntentResponse.as_dict.
//   - homeassistant/components/intent/__init__.py @ 02c28258973c4848b2e51b304a69076860222d15:
//     HassTurnOn and HassTurnOff (OnOffIntentHandler) descriptions and
//     ONOFF_DEVICE_CLASSES (button, cover, valve, switch, media player).
//   - homeassistant/components/light/intent.py, the newest copy the search
//     index holds (it names no commit for it; index id 59336261428; the copy
//     it files under home-assistant/core, dd6b186a, is from 2021): HassLightSet
//     as a ServiceIntentHandler with optional color, temperature, brightness
//     (IntentSlotInfo) and required_domains={"light"}.
//   - home-assistant-libs/voluptuous-openapi 0.4.1 @ d213d3a: convert() —
//     a validator function becomes the type of its first parameter, so
//     cv.string (value: Any) becomes {} and, as an object property, gets
//     "type": "string" added after its description; vol.All(Coerce(int),
//     Range(0, 100)) becomes type/minimum/maximum; vol.In becomes an enum;
//     vol.Any(cv.string, [cv.string]) becomes anyOf [{}, array].
//
// Key order inside each schema is the order HA emits. The device_class enum
// is flattened from a Python set of enum classes, so its order changes from
// one HA process to the next; this is one observed order (newer HA also has
// "projector" among the media player classes).

import "github.com/modelcontextprotocol/go-sdk/mcp"

const (
	toolTurnOn      = "HassTurnOn"
	toolTurnOff     = "HassTurnOff"
	toolLightSet    = "HassLightSet"
	toolLiveContext = "GetLiveContext"
)

const onOffSchema = `{"type": "object", "properties": {` +
	`"name": {"type": "string"}, ` +
	`"area": {"type": "string"}, ` +
	`"floor": {"type": "string"}, ` +
	`"domain": {"type": "array", "items": {"type": "string"}}, ` +
	`"device_class": {"type": "array", "items": {"type": "string", "enum": [` +
	`"outlet", "switch", "identify", "restart", "update", ` +
	`"awning", "blind", "curtain", "damper", "door", "garage", "gate", "shade", "shutter", "window", ` +
	`"tv", "speaker", "receiver", "water", "gas"]}}}}`

var toolDefs = []struct {
	name, description, schema string
}{
	{
		name: toolTurnOn,
		description: "Turns on/opens/presses a device or entity." +
			" For locks, this performs a 'lock' action." +
			" Use for requests like 'turn on'," +
			" 'activate', 'enable', or 'lock'.",
		schema: onOffSchema,
	},
	{
		name: toolTurnOff,
		description: "Turns off/closes a device or entity." +
			" For locks, this performs an 'unlock' action." +
			" Use for requests like 'turn off'," +
			" 'deactivate', 'disable', or 'unlock'.",
		schema: onOffSchema,
	},
	{
		name:        toolLightSet,
		description: "Sets the brightness percentage or color of a light",
		schema: `{"type": "object", "properties": {` +
			`"name": {"type": "string"}, ` +
			`"area": {"type": "string"}, ` +
			`"floor": {"type": "string"}, ` +
			`"domain": {"type": "array", "items": {"type": "string", "enum": ["light"]}}, ` +
			`"color": {"type": "string"}, ` +
			`"temperature": {"type": "integer", "minimum": 0}, ` +
			`"brightness": {"type": "integer", "minimum": 0, "maximum": 100, ` +
			`"description": "The brightness percentage of the light between 0 and 100, where 0 is off and 100 is fully lit"}}}`,
	},
	{
		name: toolLiveContext,
		description: "Provides real-time information about the" +
			" CURRENT state, value, or mode of devices," +
			" sensors, entities, or areas. " +
			"Use this tool for: " +
			"1. Answering questions about current" +
			" conditions (e.g., 'Is the light on?'). " +
			"2. As the first step in conditional actions" +
			" (e.g., 'If the weather is rainy, turn off" +
			" sprinklers' requires checking the weather" +
			" first). " +
			"You may filter for devices by name, domain," +
			" and area, including combining those" +
			" filters. " +
			"Prefer filtering by domain when searching" +
			" for multiple devices of the same type.",
		schema: `{"type": "object", "properties": {` +
			`"name": {"description": "Filter entities by name or alias (case-insensitive).", "type": "string"}, ` +
			`"domain": {"anyOf": [{}, {"type": "array", "items": {"type": "string"}}], ` +
			`"description": "Filter entities by domain (e.g. 'light', 'sensor'). Accepts a single domain or a list."}, ` +
			`"area": {"description": "Filter entities by area name or alias (case-insensitive).", "type": "string"}}}`,
	},
}

// schemas holds each tool's input schema decoded in order, for validation.
var schemas = func() map[string]*obj {
	m := map[string]*obj{}
	for _, d := range toolDefs {
		v, err := decodeOrdered([]byte(d.schema))
		if err != nil {
			panic("mcptest: bad schema for " + d.name + ": " + err.Error())
		}
		m[d.name] = v.(*obj)
	}
	return m
}()

func mcpTools() []*mcp.Tool {
	var out []*mcp.Tool
	for _, d := range toolDefs {
		out = append(out, &mcp.Tool{
			Name:        d.name,
			Description: d.description,
			InputSchema: rawJSON(d.schema),
		})
	}
	return out
}
