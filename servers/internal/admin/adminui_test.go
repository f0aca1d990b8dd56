package admin_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/internal/adminui"
	"github.com/knowngood/knowngood/servers/internal/settings"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

// uiTarget is a Socket.IO target started with -admin-ui, as the admin
// listener sees it.
type uiTarget struct{ link *adminui.Link }

func (u uiTarget) AdminUI() *adminui.Link { return u.link }

// TestAdminUIRoutes: with a target started with -admin-ui the admin
// listener serves the Socket.IO Admin UI's page, filled in with the
// target's address, and the dashboard links it; without, /admin-ui/
// says why it is not there and the dashboard does not link it.
func TestAdminUIRoutes(t *testing.T) {
	link := adminui.NewLink("/socket.io/", false, false)
	cfg := config.Default()
	opts := settings.Run(cfg, uiTarget{link})
	opts.Listening("127.0.0.1:8080", "127.0.0.1:9100")
	h := admin.Handler(settings.Admin(cfg, protocol.About{}, uiTarget{link}), nil, nil, nil)
	if code, body := get(t, h, "/admin-ui/"); code != http.StatusOK || !strings.Contains(body, `"server_url":"http://127.0.0.1:8080"`) {
		t.Errorf("/admin-ui/: %d %.300s", code, body)
	}
	if code, body := get(t, h, "/"); code != http.StatusOK || !strings.Contains(body, `<p id="admin-ui" class="note">`) {
		t.Errorf("/ with -admin-ui: %d, no link to the Admin UI: %s", code, body)
	}

	h = admin.Handler(settings.Admin(cfg, protocol.About{}, struct{}{}), nil, nil, nil)
	if code, body := get(t, h, "/admin-ui/"); code != http.StatusNotFound || !strings.Contains(body, "-admin-ui") {
		t.Errorf("/admin-ui/ without -admin-ui: %d %q, want 404 naming the flag", code, body)
	}
	if _, body := get(t, h, "/"); !strings.Contains(body, `<p id="admin-ui" class="note" hidden>`) {
		t.Errorf("/ without -admin-ui links the Admin UI: %s", body)
	}
	if settings.Run(cfg, struct{}{}).Listening != nil {
		t.Error("a target without -admin-ui is told where the listeners are")
	}
}
