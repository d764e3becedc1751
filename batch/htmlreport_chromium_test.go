package batch

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
)

// chromium returns the path of a headless Chromium, or skips the test
// without one; under CI=true it fails instead (.ci/run installs the
// Debian package chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found: install the Debian package chromium (.ci/run does)")
	}
	t.Skip("chromium not found: install the Debian package chromium to render the report")
	return ""
}

// screenshot renders the page at path in headless Chromium, 1200×900, and
// returns the PNG. It gives up after 30 s.
func screenshot(t *testing.T, bin, path string) image.Image {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=1200,900",
		"file://"+path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second // a helper process that keeps the pipe open
	err := cmd.Run()
	require.NoError(t, errors.Join(err, ctx.Err()), "chromium: %s", out.String())
	f, err := os.Open(shot)
	require.NoError(t, err, "chromium wrote no screenshot: %s", out.String())
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	return img
}

// near reports whether c is within 8 of rgb in each channel.
func near(c color.Color, rgb [3]uint8) bool {
	r, g, b, _ := c.RGBA()
	d := func(v uint32, w uint8) bool { return int(v>>8)-int(w) <= 8 && int(w)-int(v>>8) <= 8 }
	return d(r, rgb[0]) && d(g, rgb[1]) && d(b, rgb[2])
}

// TestWriteHTMLChromium renders the report of a short real run (a loopback
// API that throttles once) in headless Chromium and checks that the chart
// is drawn: the screenshot is no blank page, and it holds the series'
// blue (#1f77b4) and the red (#d62728) of the limit and the throttle.
func TestWriteHTMLChromium(t *testing.T) {
	bin := chromium(t)
	srv := throttleOnce(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	tr := &pace.Transport{Limits: pace.Hosts{host: {Limit: pace.LeakyBucket(pace.PerSecond(200), pace.LeakyOptions{})}}}
	defer tr.CloseIdleConnections()
	_, page := reportOfRun(t, srv, &http.Client{Transport: tr})
	path := filepath.Join(t.TempDir(), "report.html")
	require.NoError(t, os.WriteFile(path, []byte(page), 0o600))

	img := screenshot(t, bin, path)
	b := img.Bounds()
	require.Equal(t, image.Rect(0, 0, 1200, 900), b)
	var other, blue, red int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := img.At(x, y)
			if !near(c, [3]uint8{0xff, 0xff, 0xff}) { // the page's background
				other++
			}
			switch {
			case near(c, [3]uint8{0x1f, 0x77, 0xb4}):
				blue++
			case near(c, [3]uint8{0xd6, 0x27, 0x28}):
				red++
			}
		}
	}
	t.Logf("screenshot: %d pixels not background, %d of the series' blue, %d red", other, blue, red)
	assert.Greater(t, other, 10_000, "a page with text and a chart")
	assert.Less(t, other, b.Dx()*b.Dy()/2, "a white page, mostly")
	assert.Greater(t, blue, 500, "the series of requests sent is drawn")
	assert.Greater(t, red, 50, "the limit and the throttle are drawn")
}
