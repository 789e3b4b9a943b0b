package share

import (
	"strings"
)

// RelayPage returns the share page as a relay serves it
// (relay.Config.Page): the same page, styles and app.js, with relay.js
// loaded first to carry the page's requests sealed through the relay.
func RelayPage() map[string][]byte {
	out := map[string][]byte{}
	for _, name := range []string{"assets/page.html", "assets/app.js", "assets/app.css", "assets/relay.js"} {
		b, err := assets.ReadFile(name)
		if err != nil {
			panic(err) // embedded at build time
		}
		out[name] = b
	}
	html := string(out["assets/page.html"])
	delete(out, "assets/page.html")
	const app = `<script src="/assets/app.js" defer></script>`
	out["page.html"] = []byte(strings.Replace(html, app, `<script src="/assets/relay.js" defer></script>`+"\n"+app, 1))
	return out
}
