// Runs Stagehand's computer-use agent headless for one rollout; executed by the pinned Node.
//
// It reads its settings from the JSON file named on the command line (written by
// stagehand.py), attaches to the browser the runner owns over CDP, runs the agent on the
// prompt with the mode's API client pointed at the proxy, and writes what the agent ended
// with to settings.result_file. Exit 0 once the agent's run returned (done or out of
// steps: the verifier judges the state), 1 when it crashed.
import { readFile, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";

// Each mode's Stagehand client (AgentProvider) and the base URL its SDK wants: the OpenAI
// SDK appends /responses or /chat/completions to .../v1, the Anthropic SDK /v1/messages to the root.
const PROVIDERS = { responses: "openai", messages: "anthropic", chat: "microsoft" };

async function browserWebSocket(cdpUrl) {
  // Stagehand's CDP connection takes the browser's ws:// URL, the runner hands out http://.
  const response = await fetch(`${cdpUrl}/json/version`);
  if (!response.ok) throw new Error(`${cdpUrl}/json/version answered ${response.status}`);
  return (await response.json()).webSocketDebuggerUrl;
}

async function run(settings) {
  // The package lives in the harness folder, not beside this script: import it by path.
  const { Stagehand } = await import(pathToFileURL(settings.stagehand_entry).href);
  const stagehand = new Stagehand({
    env: "LOCAL",
    disableAPI: true, // no Browserbase API: every model call goes to the proxy
    localBrowserLaunchOptions: { cdpUrl: await browserWebSocket(settings.cdp_url) },
    verbose: 1,
    disablePino: true, // plain console logs into the harness's stderr, no logger worker thread
  });
  await stagehand.init();
  try {
    const agent = stagehand.agent({
      mode: "cua",
      model: {
        modelName: settings.model,
        provider: PROVIDERS[settings.mode], // explicit: the policy's name is none Stagehand knows
        apiKey: settings.api_key,
        baseURL: settings.base_url,
      },
    });
    const result = await agent.execute({ instruction: settings.prompt, maxSteps: settings.max_steps });
    return {
      message: result.message ?? null,
      completed: Boolean(result.completed),
      success: Boolean(result.success),
      actions: (result.actions ?? []).map((action) => action.type),
    };
  } finally {
    // Attached over CDP, close() drops the connection only; the browser is the runner's.
    await stagehand.close();
  }
}

const settings = JSON.parse(await readFile(process.argv[2], "utf8"));
try {
  const result = await run(settings);
  await writeFile(settings.result_file, JSON.stringify(result, null, 2) + "\n");
  console.log(JSON.stringify(result));
  process.exit(0);
} catch (error) {
  console.error(error?.stack ?? String(error));
  process.exit(1);
}
