// Command list is the Lambda function that serves the list route group.
package main

import (
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
)

func main() { lambdahost.Main(httpapi.GroupList) }
