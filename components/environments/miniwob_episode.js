// Injected by OpenForge into the served MiniWoB task page (components/environments/miniwob.py).
// Does what BrowserGym's MiniWoB tasks do through Playwright, from inside the page instead:
// seed Math.random, lengthen the episode timer, start the episode; and reports each
// episode's start (its utterance) and end (MiniWoB's rewards) to the state endpoint's
// server, so the verifier needs no browser. `window.OPENFORGE_MINIWOB` is set by the
// server just before this script: {seed, episodeMaxTimeMs, reportUrl}.
(function () {
  var config = window.OPENFORGE_MINIWOB;
  var utterance = null;

  function report(event) {
    // keepalive: the report still goes out when the agent navigates away at once.
    fetch(config.reportUrl, {method: 'POST', body: JSON.stringify(event), keepalive: true});
  }

  function readUtterance() {
    var found = core.getUtterance();  // a few tasks return {utterance, fields}
    return typeof found === 'string' ? found : found.utterance;
  }

  function whenReady(then) {
    // Some tasks build their problem asynchronously and say so with WOB_TASK_READY.
    if (WOB_TASK_READY) { then(); } else { setTimeout(function () { whenReady(then); }, 20); }
  }

  var startEpisodeReal = core.startEpisodeReal;
  core.startEpisodeReal = function () {
    startEpisodeReal.apply(this, arguments);
    whenReady(function () {
      utterance = readUtterance();
      report({event: 'start', utterance: utterance});
    });
  };

  var endEpisode = core.endEpisode;
  core.endEpisode = function () {
    // MiniWoB rewards only the first end of an episode (its timer is null afterwards).
    var live = core.EP_TIMER !== null;
    endEpisode.apply(this, arguments);
    if (live) {
      report({event: 'end', utterance: utterance, reward: WOB_REWARD_GLOBAL,
              raw_reward: WOB_RAW_REWARD_GLOBAL, reason: WOB_REWARD_REASON});
    }
  };

  // After the page's own onload (which shows the START cover), as BrowserGym does it.
  window.addEventListener('load', function () {
    Math.seedrandom(config.seed);
    core.EPISODE_MAX_TIME = config.episodeMaxTimeMs;
    core.startEpisodeReal();
  });
})();
