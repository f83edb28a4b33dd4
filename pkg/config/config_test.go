package config_test

import (
	"log/slog"
	"strconv"
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
		name, trust, emf string
		wantTrust        *bool
		wantEMF          bool
		wantErr          bool
	}{
		{name: "unset: the address decides, no EMF"},
		{name: "trust on, EMF on", trust: "1", emf: "1", wantTrust: &on, wantEMF: true},
		{name: "trust off, EMF off", trust: "0", emf: "0", wantTrust: &off},
		{name: "a word is not a switch", trust: "yes", wantErr: true},
		{name: "true is not 1", emf: "true", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(config.EnvTrustSubjectHeader, tc.trust)
			t.Setenv(config.EnvEMF, tc.emf)
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

// switchString shows a switch's three states.
func switchString(b *bool) string {
	if b == nil {
		return "unset"
	}
	return strconv.FormatBool(*b)
}

func TestRates(t *testing.T) {
	for _, tc := range []struct {
		name, caller, app string
		want              [2]uds.Rate
		wantErr           bool
	}{
		{name: "unset: no limits"},
		{name: "both", caller: "100/200", app: "1000/1000", want: [2]uds.Rate{{PerSecond: 100, Burst: 200}, {PerSecond: 1000, Burst: 1000}}},
		{name: "no burst", caller: "100", wantErr: true},
		{name: "zero rate", caller: "0/10", wantErr: true},
		{name: "zero burst", app: "10/0", wantErr: true},
		{name: "not a number", caller: "ten/10", wantErr: true},
		{name: "fraction", caller: "1.5/10", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(config.EnvRatePerCaller, tc.caller)
			t.Setenv(config.EnvRatePerApp, tc.app)
			cfg, err := config.FromEnv()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if got := [2]uds.Rate{cfg.RatePerCaller, cfg.RatePerApp}; !tc.wantErr && got != tc.want {
				t.Errorf("rates %+v, want %+v", got, tc.want)
			}
		})
	}
}
