"""Tool profiles of the `agent` method, one module each, registered in `engine.agent.tools.PROFILES`."""
