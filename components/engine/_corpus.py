"""The fixed text the tiny tokenizer is trained on.

Built in code from word lists and a seeded ``random.Random`` so every machine trains the
same vocabulary without downloading anything. The mix (prose, code, shell, JSON tool
calls, chat markup) matches what agent harnesses send, so their prompts tokenize into
a sensible number of tokens rather than one token per byte.
"""

from __future__ import annotations

import json
import random

_ENGLISH = """
the of and to a in is it you that he was for on are with as I his they be at one have
this from or had by not word but what some we can out other were all there when up use
your how said an each she which do their time if will way about many then them write
would like so these her long make thing see him two has look more day could go come did
number sound no most people my over know water than call first who may down side been
now find any new work part take get place made live where after back little only round
man year came show every good me give our under name very through just form sentence
great think say help low line differ turn cause much mean before move right boy old too
same tell does set three want air well also play small end put home read hand port large
spell add even land here must big high such follow act why ask men change went light
kind off need house picture try us again animal point mother world near build self earth
father head stand own page should country found answer school grow study still learn
plant cover food sun four between state keep eye never last let thought city tree cross
farm hard start might story saw far sea draw left late run while press close night real
life few north open seem together next white children begin got walk example ease paper
group always music those both mark often letter until mile river car feet care second
book carry took science eat room friend began idea fish mountain stop once base hear
horse cut sure watch color face wood main enough plain girl usual young ready above ever
red list though feel talk bird soon body dog family direct pose leave song measure door
product black short numeral class wind question happen complete ship area half rock
order fire south problem piece told knew pass since top whole king space heard best hour
better true during hundred five remember step early hold west ground interest reach fast
verb sing listen six table travel less morning ten simple several vowel toward war lay
against pattern slow center love person money serve appear road map rain rule govern
pull cold notice voice unit power town fine certain fly fall lead cry dark machine note
wait plan figure star box noun field rest correct able pound done beauty drive stood
contain front teach week final gave green oh quick develop ocean warm free minute strong
special mind behind clear tail produce fact street inch multiply nothing course stay
wheel full force blue object decide surface deep moon island foot system busy test record
boat common gold possible plane stead dry wonder laugh thousand ago ran check game shape
equate hot miss brought heat snow tire bring yes distant fill east paint language among
file files directory folder repository branch commit merge patch diff error warning
failed passed success result output input request response message assistant user tool
function call arguments parameters properties description required string integer boolean
array object null true false value values key keys path command run test tests task agent
model token tokens server client session trajectory reward policy checkpoint training
"""

_CODE = """
def class return import from as with try except finally raise yield lambda pass break
continue while for in if elif else not and or is None True False self cls async await
print len range list dict set tuple str int float bool open read write close append
extend items keys values get update join split strip replace format startswith endswith
const let var function return export default require module console log await async
new this null undefined typeof instanceof Promise then catch throw Error JSON parse
stringify Object Array Map Set Math floor ceil random length push pop shift slice
ls cd cat echo grep sed awk find mkdir rm cp mv touch chmod git status add commit push
pull clone checkout diff log python pip install pytest npm node make docker kubectl curl
"""

_SYLLABLES = (
    "ba be bi bo bu ca ce ci co cu da de di do du fa fe fi fo fu ga ge gi go gu ha he hi ho "
    "ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro "
    "ru sa se si so su ta te ti to tu va ve vi vo wa we wi xa ya yo za ze zi zo an en in on "
    "un ar er ir or ur al el il ol ul as es is os us at et it ot ut str tr pl cl gr br ch sh th"
).split()

_CHAT_MARKUP = [
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n",
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n",
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>',
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    "<tool_response>\n",
    "\n</tool_response>",
]


def _pseudo_words(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(count)]


def _identifier(rng: random.Random, words: list[str]) -> str:
    parts = [rng.choice(words) for _ in range(rng.randint(1, 3))]
    style = rng.randrange(3)
    if style == 0:
        return "_".join(parts)
    if style == 1:
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    return "".join(p.capitalize() for p in parts)


def _sentence(rng: random.Random, words: list[str]) -> str:
    picked = [rng.choice(words) for _ in range(rng.randint(4, 14))]
    picked[0] = picked[0].capitalize()
    return " ".join(picked) + rng.choice([".", ".", ".", "?", "!", ":", ","])


def _code_line(rng: random.Random, code: list[str], names: list[str]) -> str:
    name = _identifier(rng, names)
    templates = [
        f"def {name}(self, {rng.choice(names)}):",
        f"    return {name}({rng.randint(0, 999)})",
        f"{name} = {rng.choice(code)}({rng.choice(names)!r})",
        f"const {name} = await {rng.choice(names)}.{rng.choice(code)}();",
        f"$ {rng.choice(code)} {rng.choice(names)}/{name}.py",
        f"if {name} is None or len({name}) > {rng.randint(1, 99)}:",
        f"import {rng.choice(names)}.{name}",
        f"    {name}.{rng.choice(code)}({rng.choice(names)}, {rng.random():.3f})",
    ]
    return rng.choice(templates)


def _tool_call_json(rng: random.Random, names: list[str]) -> str:
    arguments = {rng.choice(names): rng.choice([rng.choice(names), rng.randint(0, 500), True])}
    call = json.dumps({"name": _identifier(rng, names), "arguments": arguments})
    schema = json.dumps(
        {
            "type": "function",
            "function": {
                "name": _identifier(rng, names),
                "description": _sentence(rng, names),
                "parameters": {
                    "type": "object",
                    "properties": {rng.choice(names): {"type": rng.choice(["string", "integer"])}},
                    "required": [rng.choice(names)],
                },
            },
        }
    )
    return f"<tool_call>\n{call}\n</tool_call>\n{schema}"


def build_corpus(lines: int = 6000) -> list[str]:
    """Return the training texts; the same list on every call and every machine."""
    rng = random.Random(20240601)
    english = _ENGLISH.split()
    code = _CODE.split()
    names = english + code + _pseudo_words(rng, 2500)
    texts = list(_CHAT_MARKUP)
    makers = [
        lambda: _sentence(rng, english),
        lambda: _sentence(rng, names),
        lambda: _code_line(rng, code, names),
        lambda: _tool_call_json(rng, names),
        lambda: f"{rng.randint(0, 99999)} {rng.choice(english)} {rng.random():.4f}",
    ]
    weights = [5, 3, 4, 1, 1]
    for _ in range(lines):
        texts.append(rng.choices(makers, weights)[0]())
    return texts
