package config_test

import (
	"log/slog"
	"testing"

	"github.com/udsproject/uds/pkg/config"
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
