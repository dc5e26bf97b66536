"""Word cues for scene type and emotional tone: small regex lexicons, counted per passage.

A lexicon is a string of whole-word cues: `word*` allows any ending, `a_b` is the phrase
"a b" (any whitespace between). Matching ignores case. Changing a lexicon changes what
chunks get: bump LEXICON_VERSION so enriched documents are re-indexed.
"""

from __future__ import annotations

import re

LEXICON_VERSION = 1


def _cues(lexicon: str) -> re.Pattern[str]:
    """One case-insensitive pattern of the lexicon's whole-word cues."""
    parts = []
    for cue in lexicon.split():
        body = re.escape(cue.rstrip("*")).replace("_", r"\s+")
        parts.append(body + r"\w*" if cue.endswith("*") else body)
    return re.compile(rf"\b(?:{'|'.join(parts)})\b", re.IGNORECASE)


# Quoted speech: straight or curly double quotes, guillemets.
QUOTE = re.compile(r"\"[^\"\n]+\"|\u201c[^\u201d]+\u201d|\u00ab[^\u00bb]+\u00bb")
SPEECH = _cues(
    """said asked replied answered whispered shouted muttered murmured exclaimed called_out
        cried_out snapped yelled"""
)

SCENE_CUES: dict[str, re.Pattern[str]] = {
    "action": _cues(
        """ran run runs running sprint* jump* leap* leapt grab* struck strike* punch* kick* fought
        fight* dodg* ducked ducking lunge* swung swing* slam* chase chased chasing charg*
        fired_at shot shoot* threw throw* rush* crash* explod* explosion attack* fled flee*
        tackl* sword* blade raced scrambl* hurl*"""
    ),
    "description": _cues(
        """stretched towered loomed lay stood covered smell* scent colou* color* golden silver
        crimson pale ancient vast narrow beneath landscape horizon sunlight moonlight walls
        valley forest sky hills river stone"""
    ),
    "introspection": _cues(
        """wondered wondering thought think* felt feel* knew wish* hoped doubt* regret* if_only
        should_have could_have herself himself myself her_mind his_mind my_mind guilt ached
        longed"""
    ),
    "flashback": _cues(
        """years_ago years_earlier years_before long_ago back_then as_a_child as_a_boy as_a_girl
        when_she_was_young when_he_was_young rememb* recall* memory memories used_to that_summer
        that_winter in_those_days"""
    ),
    "revelation": _cues(
        """realized realised realizing realising realization realisation discover* reveal* the_truth
        secret secrets secretly confess* admitted all_along found_out finally_understood
        never_told was_actually true_identity in_truth unmasked"""
    ),
}

TONE_CUES: dict[str, re.Pattern[str]] = {
    "tense": _cues(
        """heart_pounded pounding held_her_breath held_his_breath froze frozen trembl* danger*
        nervous* sweat* creak* silence too_quiet footsteps careful* tense tension panic* threat*"""
    ),
    "sad": _cues(
        """tears tearful wept weep* cried cries crying grief griev* mourn* sorrow* lonely loneliness
        loss funeral sob sobs sobbed sobbing heartbroken sad sadly sadness"""
    ),
    "happy": _cues(
        """laugh* smil* joy* grin grins grinned grinning delight* cheer* celebrat* happy happiness
        glad beamed beaming giggl* warmth"""
    ),
    "angry": _cues(
        """furious fury rage raging angry anger glar* snarl* hiss* clench* seeth* yelled yelling
        shout* slammed spat livid"""
    ),
    "mysterious": _cues(
        """strange* shadow* unknown hidden myster* eerie fog mist cloak* riddle* whisper*
        unexplained vanish* symbol*"""
    ),
    "romantic": _cues(
        """kiss* love* embrac* tender* caress* blush* longing gaze* darling beloved her_lips
        his_lips held_hands"""
    ),
}


def count(pattern: re.Pattern[str], text: str) -> int:
    """How many cues of one pattern the text holds."""
    return sum(1 for _ in pattern.finditer(text))
