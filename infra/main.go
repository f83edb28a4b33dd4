// Command infra is the UDS CDK app. The CDK CLI runs it (see cdk.json at the
// repository root) with the context values documented in mk/infra.mk; it
// synthesizes one stack, UdsStack unless context stackName says otherwise.
//
// cdk.json builds the app into build/ and runs it from the repository root
// rather than with `go run` inside infra/: the CLI hands the app paths
// relative to its own working directory (the output directory, the error
// and performance counter files), and they only resolve from there.
//
// It is a module of its own so that the Lambda functions never build against
// the CDK, and it takes the table layout from pkg/schema so the stack and the
// store cannot disagree.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	app := awscdk.NewApp(nil)
	props, err := PropsFromContext(app.Node())
	if err == nil {
		err = props.CheckAssets()
	}
	if err != nil {
		fail(err)
	}
	NewUdsStack(app, *props.StackName, props)
	app.Synth(nil)
	closeJSII()
}

// closeJSII stops the jsii kernel, the node process behind every CDK call.
// jsii-runtime-go waits for that process from two goroutines when it closes,
// and the loser reports "Runtime process exited abnormally: waitid: no child
// processes" although the process exited cleanly. Everything worth saying
// has been said by then, so stderr is muted for the close.
func closeJSII() {
	if devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		stderr := os.Stderr
		os.Stderr = devNull
		defer func() { os.Stderr = stderr; devNull.Close() }()
	}
	jsii.Close()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "infra:", err)
	closeJSII()
	os.Exit(1)
}
