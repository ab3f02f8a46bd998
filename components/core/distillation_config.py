"""The ``algorithm.distillation`` section: on-policy distillation from a teacher model.

The student samples through the harness as in RL; a teacher that shares its tokenizer
scores each sampled token (prompt logprobs from a second serve daemon), and the
teacher's reverse-KL term becomes part of each token's advantage (docs/trainer.md,
"On-policy distillation"). The fields mirror veRL's ``distillation.distillation_loss``
with ``use_policy_gradient: true``, so the veRL backend can map them one to one.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# veRL's kl_penalty estimators whose value is >= 0 for every token. Used as a reward they
# also punish tokens the teacher likes more than the student does, so the policy gradient
# pushes away from the teacher; veRL recommends k1 for use_policy_gradient for that reason.
_NON_NEGATIVE_ESTIMATORS = ("k2", "mse", "k3", "low_var_kl", "abs")


_DEFAULT_WEIGHT = 1.0


class DistillationConfig(BaseModel):
    """A teacher's per-token log-probs beside (or instead of) the verifier reward.

    Per sampled token ``a`` (response mask 1), with ``s = log p_student(a)`` (the recorded
    sampling log-prob) and ``t = log p_teacher(a)``:

        teacher_term = -clamp(kl_penalty(s, t, estimator), -clamp, clamp)    # k1: t - s
        advantage    = reward_advantage + weight * teacher_term              # verifier_reward: true
        advantage    = teacher_term                                          # verifier_reward: false
    """

    model_config = ConfigDict(extra="forbid")

    teacher_model: str = Field(
        description="The teacher: a HuggingFace folder or s3:// prefix, served by a second serve daemon. It must "
        "share the policy's tokenizer (same vocabulary and special tokens): its log-probs are per token id."
    )
    weight: float = Field(
        _DEFAULT_WEIGHT,
        gt=0,
        description="Coefficient of the teacher's term beside the verifier reward (veRL's distillation_loss_coef): "
        "1 makes one nat of teacher-over-student log-probability on a token count as much as one unit of the "
        "rollout's GRPO advantage; smaller leans on the verifier. Only with verifier_reward: true.",
    )
    verifier_reward: bool = Field(
        True,
        description="true: the teacher's term is added to the GRPO advantage of the verifier's reward (veRL's "
        "use_task_rewards); false: pure distillation, the advantage is the teacher's term alone.",
    )
    estimator: Literal["k1"] = Field(
        "k1",
        description="veRL's kl_penalty estimator of the per-token reverse KL, log p_student - log p_teacher; its "
        "negation is the advantage. k1 is the one whose policy gradient is the reverse KL's (veRL's advice for "
        "use_policy_gradient); k2/k3/abs are never negative and would push away from the teacher.",
    )
    clamp: float = Field(
        10.0,
        gt=0,
        description="Bound of |estimator| per token, in nats (veRL's loss_max_clamp): a token the teacher finds "
        "near impossible (log-prob -9999 or -inf) costs at most this, instead of a non-finite loss.",
    )

    @field_validator("estimator", mode="before")
    @classmethod
    def _explain_refused_estimator(cls, value: Any) -> Any:
        if value == "kl":
            raise ValueError("'kl' is veRL's other name for k1: write estimator: k1")
        if value in _NON_NEGATIVE_ESTIMATORS:
            raise ValueError(
                f"{value!r} is never negative, so as an advantage it also lowers tokens the teacher prefers and "
                "the student drifts away from the teacher; use k1 (its negation, log p_teacher - log p_student, "
                "is the reverse KL's policy-gradient reward)"
            )
        return value

    @model_validator(mode="after")
    def _weight_needs_the_verifier(self) -> DistillationConfig:
        # veRL ignores distillation_loss_coef without task rewards; a weight set then would do nothing.
        # The default is let through: the compiled config the steps read spells every default out.
        if not self.verifier_reward and self.weight != _DEFAULT_WEIGHT:
            raise ValueError(
                "weight balances the teacher against the verifier reward; with verifier_reward: false the advantage "
                "is the teacher's term alone: remove weight, or set verifier_reward: true"
            )
        return self
