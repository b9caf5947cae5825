"""Chat prompts for distilling the embedded students: templated training prompts and a separate,
hand-written held-out set (different wording and topics) used only for measuring agreement.

`training_prompts` is the first data set (every student trains on it); `extra_prompts` widens it
with how-to questions, people and more templates, and `self_prompts` with questions the target
writes itself (the draft and the qualifier train on all three)."""

import random

import torch

TOPICS = """
photosynthesis|black holes|the water cycle|volcanoes|earthquakes|the immune system|vaccines|DNA|
evolution|gravity|magnetism|electricity|the speed of light|climate change|renewable energy|
solar panels|wind turbines|nuclear power|recycling|the ocean tides|coral reefs|rainforests|deserts|
honeybees|octopuses|dolphins|elephants|penguins|dinosaurs|the Moon|Mars|Jupiter|the Sun|comets|
the International Space Station|the Roman Empire|ancient Egypt|the pyramids|the printing press|
the Industrial Revolution|the French Revolution|the Renaissance|the Silk Road|the Great Wall of China|
democracy|taxes|inflation|the stock market|budgeting|saving money|credit cards|supply and demand|
coffee|tea|chocolate|bread baking|pizza|healthy breakfast|vegetarian cooking|spices|fermentation|
sleep|exercise|running|yoga|meditation|stress|friendship|time management|public speaking|
learning a new language|reading books|writing an essay|job interviews|teamwork|leadership|
the internet|email|passwords|computer viruses|artificial intelligence|machine learning|robots|
smartphones|video games|social media|programming|Python lists|recursion|databases|open source software|
music|the piano|jazz|painting|photography|poetry|theater|movies|libraries|museums|
soccer|chess|the Olympic Games|mountains|rivers|lakes|islands|the Arctic|weather forecasts|rainbows|
cats|dogs|gardening|houseplants|trees|mushrooms|bicycles|trains|airplanes|electric cars|bridges|
cities|farming|clean water|plastic pollution|the human brain|the heart|bones|teeth|memory|happiness
"""

TEMPLATES = [
    "What is {t}?",
    "Explain {t} in simple terms.",
    "Give me three interesting facts about {t}.",
    "Write a short poem about {t}.",
    "Why is {t} important?",
    "Write a short story that involves {t}.",
    "What are some common misconceptions about {t}?",
    "Summarize what you know about {t} in a few sentences.",
    "How would you explain {t} to a ten-year-old?",
    "What are the pros and cons of {t}?",
    "Write a haiku about {t}.",
    "Can you give me some tips related to {t}?",
    "Describe {t} in one paragraph.",
    "What questions do people often ask about {t}?",
    "Tell me something surprising about {t}.",
    "Write a friendly email to a colleague about {t}.",
    "List five words associated with {t} and explain each one.",
    "How has {t} changed over time?",
    "What would the world be like without {t}?",
    "Compare {t} and {u}.",
    "What do {t} and {u} have in common?",
]

ARITHMETIC = ["What is {a} plus {b}?", "What is {a} times {b}?", "If I have {a} apples and eat {b}, "
              "how many are left?", "Is {a} an even number?", "What is {a} minus {b}?"]

HELD_OUT = [
    "What is the capital of France?",
    "How do airplanes stay in the air?",
    "Write a limerick about a sleepy cat.",
    "Give me a recipe for a simple tomato soup.",
    "What causes the seasons on Earth?",
    "Suggest three names for a small bakery.",
    "How can I improve my handwriting?",
    "Explain what a prime number is.",
    "Why do leaves change color in autumn?",
    "What should I pack for a weekend camping trip?",
    "Describe the taste of a lemon to someone who has never had one.",
    "What is the difference between weather and climate?",
    "Write two sentences encouraging a friend before an exam.",
    "How does a refrigerator keep food cold?",
    "Who was Ada Lovelace?",
    "What are good habits for staying focused while studying?",
    "Translate 'good morning, how are you?' into Spanish.",
    "Why is the sky blue?",
    "Give me an idea for a birthday party for a seven-year-old.",
    "What is a noun? Give examples.",
    "How do I make my tomato plants grow better?",
    "Explain why we need to drink water.",
    "Write the opening line of a mystery novel.",
    "What are the planets in our solar system?",
]


def _normalised(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


_HELD_OUT_NORMALISED = {_normalised(prompt) for prompt in HELD_OUT}


def is_held_out(prompt: str) -> bool:
    """True for a held-out prompt, however it is cased, spaced or punctuated."""
    return _normalised(prompt) in _HELD_OUT_NORMALISED


EXTRA_TEMPLATES = [
    "Write a limerick about {t}.",
    "Explain the difference between {t} and {u}.",
    "What is the history of {t}?",
    "Give me a one-sentence definition of {t}.",
    "Suggest three names for a blog about {t}.",
    "Write a short speech about {t} for a school assembly.",
    "What should a beginner know about {t}?",
    "Give me a fun quiz question about {t}, with the answer.",
    "Write a product description for a book about {t}.",
    "What are the main parts of {t}?",
]

TASKS = """
boil an egg|change a flat tire|write a resume|start a vegetable garden|learn to juggle|fall asleep faster|
clean a laptop keyboard|plan a road trip|make friends in a new city|prepare for a marathon|
organize my closet|make pancakes|train a puppy|save money for a vacation|write a thank-you note|tie a tie|
care for a cactus|study for a math test|paint a room|make iced coffee|stop procrastinating|
remember names better|keep a journal|bake cookies|fix a squeaky door|choose a laptop|
learn to swim|cook rice|reduce screen time|prepare for a job interview|write a cover letter|
start running|make a budget|wash a wool sweater|grow herbs indoors|teach a child to ride a bike|
plan a picnic|make homemade pizza dough|stay warm in winter|pack a suitcase
"""

PEOPLE = """
Isaac Newton|Marie Curie|Leonardo da Vinci|Albert Einstein|Cleopatra|William Shakespeare|
Charles Darwin|Nelson Mandela|Galileo Galilei|Wolfgang Amadeus Mozart|Frida Kahlo|Alan Turing|
Nikola Tesla|Jane Austen|Julius Caesar|Confucius|Ludwig van Beethoven|Amelia Earhart|
Mahatma Gandhi|Florence Nightingale|Thomas Edison|Vincent van Gogh|Rosa Parks|Neil Armstrong
"""

TASK_TEMPLATES = ["How do I {x}?", "What is the best way to {x}?", "Give me step-by-step instructions to {x}.",
                  "What mistakes should I avoid when I {x}?", "I want to {x}. Where do I start?"]
PERSON_TEMPLATES = ["Who was {x}?", "What is {x} famous for?", "Tell me three facts about {x}.",
                    "Write a short biography of {x}."]


def _split(text: str) -> list[str]:
    return [item.strip() for item in text.replace("\n", "").split("|") if item.strip()]


def topics() -> list[str]:
    return _split(TOPICS)


def _arithmetic(rng: random.Random) -> str:
    return rng.choice(ARITHMETIC).format(a=rng.randint(2, 99), b=rng.randint(2, 30))


def training_prompts(count: int, seed: int) -> list[str]:
    """`count` distinct prompts: topics x templates, plus a tenth of small arithmetic questions."""
    rng = random.Random(seed)
    subjects, prompts = topics(), set()
    while len(prompts) < count:
        if rng.random() < 0.1:
            prompt = _arithmetic(rng)
        else:
            first, second = rng.sample(subjects, 2)
            prompt = rng.choice(TEMPLATES).format(t=first, u=second)
        if not is_held_out(prompt):
            prompts.add(prompt)
    return sorted(prompts)


def extra_prompts(count: int, seed: int, exclude: list[str]) -> list[str]:
    """`count` distinct prompts, none in `exclude` or HELD_OUT: every how-to question and question
    about a person the short lists make, the rest topics x (all templates) and a tenth arithmetic."""
    rng = random.Random(seed + 1)
    subjects, tasks, people = topics(), _split(TASKS), _split(PEOPLE)
    taken, prompts = set(exclude), set()
    while len(prompts) < count:
        draw = rng.random()
        if draw < 0.1:
            prompt = _arithmetic(rng)
        elif draw < 0.4:
            prompt = rng.choice(TASK_TEMPLATES).format(x=rng.choice(tasks))
        elif draw < 0.55:
            prompt = rng.choice(PERSON_TEMPLATES).format(x=rng.choice(people))
        else:
            first, second = rng.sample(subjects, 2)
            prompt = rng.choice(TEMPLATES + EXTRA_TEMPLATES).format(t=first, u=second)
        if prompt not in taken and not is_held_out(prompt):
            prompts.add(prompt)
    return sorted(prompts)


def _user_turn_start(tokenizer) -> str:
    """The chat template rendered up to where a user's message begins."""
    marker = "\x00"
    rendered = tokenizer.apply_chat_template([{"role": "user", "content": marker}], tokenize=False)
    return rendered[:rendered.index(marker)]


def _usable_prompt(text: str) -> bool:
    return len(text.split()) >= 3 and text.isprintable() and text.isascii()


@torch.no_grad()
def self_prompts(target, tokenizer, count: int, seed: int, batch_size: int = 32, max_tokens: int = 48) -> list[str]:
    """`count` distinct user messages the target writes itself when sampled from the start of a user
    turn (the Magpie recipe): questions as varied as its chat training data. Kept only if the turn
    ended within `max_tokens`, is printable ASCII of at least 3 words, and is not a held-out prompt
    (compared ignoring case, spaces and punctuation)."""
    torch.manual_seed(seed)
    start = tokenizer([_user_turn_start(tokenizer)] * batch_size, return_tensors="pt", add_special_tokens=False)
    width, prompts = start["input_ids"].shape[1], []
    while len(prompts) < count:
        out = target.generate(**start, max_new_tokens=max_tokens, do_sample=True, temperature=1.0, top_p=0.95,
                              top_k=None, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
        for row in out[:, width:].tolist():
            if tokenizer.eos_token_id not in row:
                continue
            text = tokenizer.decode(row[:row.index(tokenizer.eos_token_id)]).strip()
            if _usable_prompt(text) and not is_held_out(text) and text not in prompts:
                prompts.append(text)
    return prompts[:count]
