package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-robotics/chorus/drivers/mcp/mcptest"
)

// An MCP server of tools.mcp is checked as the robot will use it: it
// answers, takes the token and has every tool the config allows; each
// failure is named with its fix, and the token is never printed.
func TestDoctorChecksTheMCPServers(t *testing.T) {
	b, m := room(t, "sk-right")
	const token = "ha-doctor-token-42"
	ha := mcptest.NewHomeAssistant(t, token)
	for _, tc := range []struct {
		name, token, url, allow string
		ok                      bool
		want                    []string
	}{
		{"answers", token, ha.URL(), "[HassTurnOn, HassTurnOff]", true,
			[]string{"✓ MCP server ha (" + ha.URL() + "): answered; the model may use HassTurnOn, HassTurnOff"}},
		{"allows a tool it lacks", token, ha.URL(), "[HassTurnOn, HassOpenDoor]", false,
			[]string{"✗ MCP server ha", "allows tools the server does not have: HassOpenDoor", "fix: fix tools.mcp[0].allow: the server has ", "HassLightSet"}},
		{"refuses the token", "not-the-token", ha.URL(), "[HassTurnOn]", false,
			[]string{"✗ MCP server ha", "fix: the server refused the token", "DOCTOR_TEST_HA_TOKEN"}},
		{"down", token, "http://127.0.0.1:1/api/mcp", "[HassTurnOn]", false,
			[]string{"✗ MCP server ha (http://127.0.0.1:1/api/mcp)", "fix: start the server or fix tools.mcp[0].url"}},
		{"token not set", "-", ha.URL(), "[HassTurnOn]", false,
			[]string{"✗ secrets: tools.mcp[0].token_env: environment variable DOCTOR_TEST_HA_TOKEN is not set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DOCTOR_TEST_PW", "right-pw")
			t.Setenv("DOCTOR_TEST_FLOOR_PW", "floor-pw")
			t.Setenv("DOCTOR_TEST_KEY", "sk-right")
			t.Setenv("DOCTOR_TEST_HA_TOKEN", tc.token)
			if tc.token == "-" {
				os.Unsetenv("DOCTOR_TEST_HA_TOKEN")
			}
			y := fmt.Sprintf(good, b, m, t.TempDir()) + fmt.Sprintf("tools:\n  mcp:\n    - {name: ha, url: %q, token_env: DOCTOR_TEST_HA_TOKEN, allow: %s}\n", tc.url, tc.allow)
			var out bytes.Buffer
			failed := Write(&out, Run(context.Background(), load(t, y), Options{EnvFile: filepath.Join(t.TempDir(), "none")}))
			if (failed == 0) != tc.ok {
				t.Errorf("%d failed:\n%s", failed, &out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, &out)
				}
			}
			if strings.Contains(out.String(), token) || strings.Contains(out.String(), "not-the-token") {
				t.Errorf("the report prints a token:\n%s", &out)
			}
		})
	}
}
