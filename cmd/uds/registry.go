package main

// The app registry (admin): names for apps, by which operators find them.

func registry(e *env, _ []string) error {
	if e.flag("held") == "true" {
		return writeEach(e, e.c.AllApps(e.ctx))
	}
	return writeEach(e, e.c.Apps(e.ctx))
}

func showApp(e *env, args []string) error {
	a, err := e.c.App(e.ctx, args[0])
	if err != nil {
		return err
	}
	return e.writeJSON(a)
}

// appID prints the id of the app a name finds, alone on its line.
func appID(e *env, args []string) error {
	a, err := e.c.AppByName(e.ctx, args[0])
	if err != nil {
		return err
	}
	_, err = e.stdout.Write([]byte(a.ApplicationUUID + "\n"))
	return err
}

func registerApp(e *env, args []string) error {
	if !e.given("name") {
		return usageError("--name is required: the app's name")
	}
	a, err := e.c.RegisterApp(e.ctx, args[0], e.flag("name"), e.flag("description"))
	if err != nil {
		return err
	}
	return e.writeJSON(a)
}

func unregisterApp(e *env, args []string) error { return e.c.UnregisterApp(e.ctx, args[0]) }
