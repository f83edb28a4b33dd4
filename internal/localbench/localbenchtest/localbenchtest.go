// Package localbenchtest gives the tests of the benchmarks built on
// package localbench an engine and a server to run them briefly against.
package localbenchtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/udsproject/uds/pkg/config"
)

// Server returns the endpoint of the DynamoDB engine (make test's, from
// scripts/with-dynamodb.sh) and a uds-local built from this tree, or skips
// the test when there is no engine or under -short.
func Server(t *testing.T) (endpoint, bin string) {
	t.Helper()
	endpoint = os.Getenv(config.EnvDynamoDBEndpoint)
	if endpoint == "" || testing.Short() {
		t.Skip("needs a DynamoDB engine (scripts/with-dynamodb.sh) and no -short")
	}
	bin = filepath.Join(t.TempDir(), "uds-local")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/udsproject/uds/cmd/uds-local").CombinedOutput(); err != nil {
		t.Fatalf("building uds-local: %v\n%s", err, out)
	}
	return endpoint, bin
}
