package api

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
)

// The web planner: the built single-page app (its sources are in ../web,
// built by `npm run build` into webapp/, committed, and embedded here) is
// served at / and at each page's path, its assets under /assets/. It asks
// the server only through the public /v1 API, with the bearer token the
// user types in; the shell itself holds no data, so it answers without a
// token (a browser cannot send one when it opens a page) while every /v1
// call it makes still needs one.

//go:embed webapp
var webappFiles embed.FS

// embeddedWebApp reads the embedded build once.
var embeddedWebApp = sync.OnceValues(func() (*webApp, error) { return loadWebApp(webappFiles) })

// webPages are the paths that answer the app's index.html: "/" and each
// page's own path, so that a shared link (/plan?model=…) opens its page.
var webPages = []string{"/", "/plan", "/whatif", "/validate", "/step"}

// webAsset is one embedded file with what its answer needs.
type webAsset struct {
	body        []byte
	contentType string
	etag        string
}

// webApp holds the embedded files, read once.
type webApp struct {
	index  webAsset
	assets map[string]webAsset // by path under /assets/, as "app.js"
}

// loadWebApp reads the embedded build; a build without index.html is a
// programming error (the embed pattern would not compile without the
// directory, and .ci/web-check keeps its content current).
func loadWebApp(fsys fs.FS) (*webApp, error) {
	read := func(name string) (webAsset, error) {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return webAsset{}, err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(name))
		switch path.Ext(name) { // not left to the host's mime tables
		case ".js":
			ct = "text/javascript; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".html":
			ct = "text/html; charset=utf-8"
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		return webAsset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}, nil
	}
	idx, err := read("webapp/index.html")
	if err != nil {
		return nil, fmt.Errorf("web app: %w", err)
	}
	app := &webApp{index: idx, assets: map[string]webAsset{}}
	err = fs.WalkDir(fsys, "webapp/assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		a, err := read(p)
		if err != nil {
			return err
		}
		app.assets[strings.TrimPrefix(p, "webapp/assets/")] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web app: %w", err)
	}
	return app, nil
}

// webContentSecurity keeps the app to its own origin: scripts and styles
// from /assets (Observable Plot sets style attributes on its SVG, hence
// 'unsafe-inline' for styles only), API calls to this server, no frames.
const webContentSecurity = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// serveAsset answers a file with a validator: browsers revalidate (the
// names carry no hash) and get 304 while the build is the same.
func serveAsset(c *gin.Context, a webAsset) {
	h := c.Writer.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if strings.HasPrefix(a.contentType, "text/html") {
		h.Set("Content-Security-Policy", webContentSecurity)
		h.Set("X-Frame-Options", "DENY")
	}
	if match := c.GetHeader("If-None-Match"); match != "" && etagMatches(match, a.etag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, a.contentType, a.body)
}

// etagMatches reads an If-None-Match list ("*" or quoted tags, weak ones
// compared weakly, as RFC 9110 wants for it).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// isWebPath reports whether path is the app's (answered without a token).
func isWebPath(p string) bool {
	if strings.HasPrefix(p, "/assets/") {
		return true
	}
	for _, w := range webPages {
		if p == w {
			return true
		}
	}
	return false
}

// routeWebApp adds the app's routes (GET and HEAD).
func (s *Server) routeWebApp(r *gin.Engine, app *webApp) {
	index := func(c *gin.Context) { serveAsset(c, app.index) }
	for _, p := range webPages {
		r.GET(p, index)
		r.HEAD(p, index)
	}
	asset := func(c *gin.Context) {
		name := strings.TrimPrefix(c.Param("file"), "/")
		a, ok := app.assets[name]
		if !ok {
			s.fail(c, notFound("no web app asset %q", name))
			return
		}
		serveAsset(c, a)
	}
	r.GET("/assets/*file", asset)
	r.HEAD("/assets/*file", asset)
}
