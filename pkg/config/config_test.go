package config_test

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/uds"
)

func TestLogLevel(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        slog.Level
		wantErr     bool
	}{
		{name: "unset is INFO", want: slog.LevelInfo},
		{name: "the stack's WARN", value: "WARN", want: slog.LevelWarn},
		{name: "any case", value: "error", want: slog.LevelError},
		{name: "DEBUG", value: "DEBUG", want: slog.LevelDebug},
		{name: "unknown", value: "LOUD", wantErr: true},
		{name: "an offset slog would take", value: "INFO+2", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(config.EnvLogLevel, tc.value)
			cfg, err := config.FromEnv()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if !tc.wantErr && cfg.LogLevel != tc.want {
				t.Errorf("level %v, want %v", cfg.LogLevel, tc.want)
			}
		})
	}
}

func TestSwitches(t *testing.T) {
	on, off := true, false
	for _, tc := range []struct {
		name, trust, emf, routes string
		wantTrust                *bool
		wantEMF, wantRoutes      bool
		wantErr                  bool
	}{
		{name: "unset: the address decides, no EMF, metrics per function"},
		{name: "trust on, EMF on, metrics per route", trust: "1", emf: "1", routes: "1", wantTrust: &on, wantEMF: true, wantRoutes: true},
		{name: "trust off, EMF off, metrics per function", trust: "0", emf: "0", routes: "0", wantTrust: &off},
		{name: "a word is not a switch", trust: "yes", wantErr: true},
		{name: "true is not 1", emf: "true", wantErr: true},
		{name: "true is not 1 for route metrics either", routes: "true", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(config.EnvTrustSubjectHeader, tc.trust)
			t.Setenv(config.EnvEMF, tc.emf)
			t.Setenv(config.EnvRouteMetrics, tc.routes)
			cfg, err := config.FromEnv()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if got, want := switchString(cfg.TrustSubjectHeader), switchString(tc.wantTrust); got != want {
				t.Errorf("TrustSubjectHeader %s, want %s", got, want)
			}
			if cfg.EMF != tc.wantEMF {
				t.Errorf("EMF %v, want %v", cfg.EMF, tc.wantEMF)
			}
			if cfg.RouteMetrics != tc.wantRoutes {
				t.Errorf("RouteMetrics %v, want %v", cfg.RouteMetrics, tc.wantRoutes)
			}
		})
	}
}

// UDS_STREAMED_QUOTAS: on unless set to off, which the stack does where
// it reads no stream of the data tables; anything else is refused.
func TestStreamedQuotas(t *testing.T) {
	for _, tc := range []struct {
		value   string
		wantOff bool
		wantErr bool
	}{
		{value: ""}, {value: "on"}, {value: "off", wantOff: true}, {value: "0", wantErr: true}, {value: "OFF", wantErr: true},
	} {
		t.Run(strconv.Quote(tc.value), func(t *testing.T) {
			t.Setenv(config.EnvStreamedQuotas, tc.value)
			cfg, err := config.FromEnv()
			if (err != nil) != tc.wantErr || (err == nil && cfg.NoStreamedQuotas != tc.wantOff) {
				t.Errorf("NoStreamedQuotas %v, error %v; want %v, an error: %v", cfg.NoStreamedQuotas, err, tc.wantOff, tc.wantErr)
			}
		})
	}
}

func TestListenAddr(t *testing.T) {
	t.Setenv(config.EnvListenAddr, "")
	if cfg, _ := config.FromEnv(); cfg.ListenAddr != config.DefaultListenAddr {
		t.Errorf("unset: %q, want %q", cfg.ListenAddr, config.DefaultListenAddr)
	}
	t.Setenv(config.EnvListenAddr, "[::1]:9000")
	if cfg, _ := config.FromEnv(); cfg.ListenAddr != "[::1]:9000" {
		t.Errorf("set: %q, want [::1]:9000", cfg.ListenAddr)
	}
}

// TestBucket: large values need a bucket named; an endpoint and the local
// engine's address are read as they are.
func TestBucket(t *testing.T) {
	type s3 struct{ bucket, endpoint, listen string }
	for _, tc := range []struct {
		name      string
		env, want s3
	}{
		{name: "unset: no bucket, AWS's endpoint, the local engine's default address",
			want: s3{listen: config.DefaultS3ListenAddr}},
		{name: "a bucket on AWS", env: s3{bucket: "uds-values-123"},
			want: s3{bucket: "uds-values-123", listen: config.DefaultS3ListenAddr}},
		{name: "a bucket on an engine", env: s3{"uds", "http://127.0.0.1:4568", "127.0.0.1:0"},
			want: s3{"uds", "http://127.0.0.1:4568", "127.0.0.1:0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(config.EnvBucket, tc.env.bucket)
			t.Setenv(config.EnvS3Endpoint, tc.env.endpoint)
			t.Setenv(config.EnvS3ListenAddr, tc.env.listen)
			cfg, err := config.FromEnv()
			if err != nil {
				t.Fatal(err)
			}
			if got := (s3{cfg.Bucket, cfg.S3Endpoint, cfg.S3ListenAddr}); got != tc.want {
				t.Errorf("bucket, endpoint, address %+v; want %+v", got, tc.want)
			}
		})
	}
}

// TestRates reads the deployment's rate limits as the stack writes them
// (config.FormatRate), and refuses what is not a rate, naming the
// variable.
func TestRates(t *testing.T) {
	for _, tc := range []struct {
		name, caller, app string
		want              uds.RateLimits
		wantErr           string
	}{
		{name: "unset: none"},
		{name: "both", caller: "10/20", app: "500/1000", want: uds.RateLimits{
			PerCaller: uds.Rate{PerSecond: 10, Burst: 20}, PerApp: uds.Rate{PerSecond: 500, Burst: 1000}}},
		{name: "the largest", app: "1000000/1000000", want: uds.RateLimits{PerApp: uds.Rate{PerSecond: 1_000_000, Burst: 1_000_000}}},
		{name: "no burst", caller: "10", wantErr: config.EnvRatePerCaller},
		{name: "a zero burst", caller: "10/0", wantErr: config.EnvRatePerCaller},
		{name: "a zero rate", app: "0/5", wantErr: config.EnvRatePerApp},
		{name: "unlimited is no deployment limit", app: "-1/0", wantErr: config.EnvRatePerApp},
		{name: "a fraction", caller: "2.5/5", wantErr: config.EnvRatePerCaller},
		{name: "past the largest", caller: "1000001/1", wantErr: config.EnvRatePerCaller},
		{name: "spaces", caller: "10 / 20", wantErr: config.EnvRatePerCaller},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(config.EnvRatePerCaller, tc.caller)
			t.Setenv(config.EnvRatePerApp, tc.app)
			cfg, err := config.FromEnv()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "want R/B") {
					t.Fatalf("error %v, want one naming %s and the form", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := (uds.RateLimits{PerCaller: cfg.RatePerCaller, PerApp: cfg.RatePerApp}); got != tc.want {
				t.Errorf("rates %+v, want %+v", got, tc.want)
			}
			for _, r := range []uds.Rate{cfg.RatePerCaller, cfg.RatePerApp} {
				if !r.On() {
					continue
				}
				if back, err := config.ParseRate(config.FormatRate(r)); err != nil || back != r {
					t.Errorf("FormatRate(%+v) = %q reads back as %+v, %v", r, config.FormatRate(r), back, err)
				}
			}
		})
	}
}

// switchString shows a switch's three states.
func switchString(b *bool) string {
	if b == nil {
		return "unset"
	}
	return strconv.FormatBool(*b)
}

// TestAllowedOrigins: UDS_ALLOWED_ORIGINS takes origins exactly as a
// browser writes them in Origin, and refuses anything else with an error
// that names the variable and says how to write the value.
func TestAllowedOrigins(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        []string
		wantErr     string // a part of the error
	}{
		{name: "unset: none"},
		{name: "one", value: "http://localhost:3000", want: []string{"http://localhost:3000"}},
		{name: "several, spaced, once each", value: "http://localhost:3000, https://app.example,http://localhost:3000",
			want: []string{"http://localhost:3000", "https://app.example"}},
		{name: "IPv6", value: "http://[::1]:5173", want: []string{"http://[::1]:5173"}},
		{name: "a trailing slash", value: "http://localhost:3000/", wantErr: "want http://localhost:3000"},
		{name: "a path", value: "http://localhost:3000/app", wantErr: "want http://localhost:3000"},
		{name: "the default port", value: "https://app.example:443", wantErr: "want https://app.example"},
		{name: "capitals", value: "http://LocalHost:3000", wantErr: "want http://localhost:3000"},
		{name: "a wildcard", value: "*", wantErr: "is not an origin"},
		{name: "null", value: "null", wantErr: "is not an origin"},
		{name: "no scheme", value: "localhost:3000", wantErr: "is not an origin"},
		{name: "another scheme", value: "file:///tmp", wantErr: "is not an origin"},
		{name: "an empty entry", value: "http://localhost:3000,", wantErr: "an empty origin"},
		{name: "a port too large", value: "http://localhost:70000", wantErr: "not a number from 1 to 65535"},
		{name: "a host with a space", value: "http://local host:3000", wantErr: "is not an origin"},
		{name: "a host with an underscore", value: "http://my_host:3000", wantErr: "neither a host name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(config.EnvAllowedOrigins, tc.value)
			cfg, err := config.FromEnv()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), config.EnvAllowedOrigins+": ") {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || strings.Join(cfg.AllowedOrigins, " ") != strings.Join(tc.want, " ") {
				t.Errorf("%q (%v), want %q", cfg.AllowedOrigins, err, tc.want)
			}
		})
	}
}
