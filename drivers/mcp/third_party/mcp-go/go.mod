module github.com/mark3labs/mcp-go

go 1.25.5

require (
	github.com/google/jsonschema-go v0.4.2
	github.com/google/uuid v1.6.0
	github.com/spf13/cast v1.7.1
	github.com/yosida95/uritemplate/v3 v3.0.2
)
