# ruff: noqa: E501  (pure data: conversation lines are kept whole so they read like the transcripts they are)
"""Invented conversations and questions behind the bundled sample datasets (pure data).

Why a script instead of hand-written JSON: the three sample files (LoCoMo, LoCoMo-MC10,
LongMemEval S + oracle) must stay mutually consistent (same question ids and texts, evidence
pointing at the right turns) and contain every known quirk; pipeline.datasets.samples renders
them from this single source. Everything here is invented for the project.

Script syntax (LoCoMo): ``=== <sample_id> | <speaker_a> | <speaker_b>`` starts a conversation,
``--- <n> | <YYYY-MM-DD HH:MM> | <summary>`` a session (``date only`` instead of a summary: a date
key without a session, the conv-26 quirk), ``[tag] Speaker: text || caption=...; query=...;
url=...`` a turn (tag and image part optional). Question evidence strings reference tags as
``{tag}`` (-> ``D<s>:<t>``), ``{tag|colon}`` (-> ``D:<s>:<t>``), ``{tag|pad}`` (-> ``D<s>:0<t>``).
LongMemEval: ``--- <name> | <session id> | <YYYY-MM-DD HH:MM>`` starts a session; ``user:`` /
``assistant:`` lines are turns, ``*`` after the role marks ``has_answer``.
"""

from __future__ import annotations

LOCOMO_SCRIPT = """
=== conv-1 | Priya | Marcus
--- 1 | 2023-03-04 14:15 | Priya and Marcus catch up: Marcus signed the lease for his bakery Rise & Crumb on Elm Street, named by his daughter Zoe; Priya, an ER nurse now on day shifts, signed up for her first half marathon in April.
Priya: Hey Marcus! It's been ages. How are the bakery plans coming along?
[lease] Marcus: Slowly but surely! I signed the lease on a little shop on Elm Street last week. It used to be a flower shop.
Priya: That's huge! What are you going to call it?
[name] Marcus: Rise & Crumb. My daughter Zoe came up with the name while we were kneading dough one night.
[halfplan] Priya: I love it. On my end, I just signed up for my first half marathon. It's in April, so I'm running four mornings a week before my shifts at the hospital.
Marcus: Four mornings a week on top of ER night shifts? You're a machine.
[nurse] Priya: Ha, I switched to day shifts in the ER in January, so it's more doable now. Running clears my head after a hard day.
Marcus: Makes sense. Let me know when the race is and I'll bring pastries to the finish line.
--- 2 | 2023-04-16 19:40 | Priya finished her first half marathon the day before in 2:04 and wants to run a full marathon in the fall; the deck oven arrived at Rise & Crumb and Marcus baked test loaves with his eight-year-old sourdough starter Gerald.
[race] Priya: Marcus! I finished the half marathon yesterday in 2 hours and 4 minutes! || caption=a photo of a woman in a blue running shirt holding a finisher medal; query=half marathon finisher medal; url=https://example.invalid/img/medal.jpg
Marcus: That's amazing! The medal looks great. How are your legs today?
Priya: Wobbly, but I'm so happy. My goal for the fall is a full marathon.
[oven] Marcus: Congrats! Here, the big news is that the deck oven was delivered. It took three people and a lot of swearing to get it through the door.
Priya: Ha! Have you tested it yet?
[gerald] Marcus: Just a few loaves with Gerald, my sourdough starter. He's eight years old now, older than Zoe's hamster.
Priya: Gerald deserves his own spot on the menu.
Marcus: He's getting a framed photo by the register, for sure.
--- 3 | 2023-05-27 11:05 | Priya adopted Biscuit, a retired racing greyhound; Zoe's first piano recital is on June 10; Rise & Crumb opens on July 1 with free cinnamon knots.
[adopt] Priya: Big news: I adopted a retired racing greyhound named Biscuit last weekend! || caption=a photo of a gray greyhound lying on a blue couch; query=greyhound sleeping on couch; url=https://example.invalid/img/biscuit.jpg
Marcus: He looks so relaxed! How is he settling in?
[biscuitsleep] Priya: He sleeps about eighteen hours a day and is terrified of the vacuum cleaner. The shelter said he raced in Florida for three years.
Marcus: Zoe is going to beg to meet him.
[recital] Marcus: Speaking of Zoe, she has her first piano recital on June 10. She's playing a Clementi sonatina and practicing every evening.
Priya: Tell her I'll be cheering from the back row. Is she nervous?
Marcus: She says she isn't, but she's been playing the same eight bars over and over.
[opening] Marcus: Also, Rise & Crumb officially opens on July 1. We're doing free cinnamon knots for the first hundred customers.
--- 4 | 2023-06-14 18:30 | Zoe played her recital well; Priya started a Tuesday-night pottery class and will glaze her bowl teal for Biscuit; Marcus and Zoe are building a treehouse in the backyard oak.
[recitaldone] Marcus: Zoe nailed her recital on Saturday! She only missed one note and took a very dramatic bow.
Priya: That's wonderful! She must be so proud.
[pottery] Priya: I started a wheel-throwing pottery class on Tuesday nights. My first bowl collapsed, but the second one survived. || caption=a photo of a lopsided clay bowl on a pottery wheel; query=first pottery bowl wheel; url=https://example.invalid/img/bowl.jpg
Marcus: The second one looks great. Are you going to glaze it?
[glaze] Priya: Yes, in a deep teal. I want to use it as a water bowl for Biscuit.
Marcus: Biscuit will be the fanciest dog in town.
[treehouse] Marcus: I've also started building a treehouse with Zoe in the old oak in our backyard. We finished the platform last weekend.
Priya: Send me pictures when the roof is on!
--- 5 | 2023-07-22 09:20 | Rise & Crumb's opening week sold out of croissants daily and Marcus hired two bakers, Tomas and Aiyana; Priya plans a September trip to Lisbon with her sister Anjali and registered for the Chicago Marathon in October.
Priya: How was opening week at Rise & Crumb?
[soldout] Marcus: Chaotic and wonderful. We sold out of croissants by 9 am every single day. The cinnamon knots went in under an hour on day one.
Priya: I knew it! I'm coming by with Biscuit on Saturday.
[hire] Marcus: Please do. I had to hire two more bakers, Tomas and Aiyana, just to keep up.
[lisbon] Priya: I'm also planning a trip to Lisbon in September with my sister Anjali. We want to eat pasteis de nata every day.
Marcus: Research trip! Bring back notes on the custard.
[fullmarathon] Priya: Deal. I also registered for the Chicago Marathon in October, so I'll be running through the Lisbon hills.
Marcus: You never stop. I admire that.
--- 6 | 2023-08-19 20:45 | The treehouse is finished with a yellow door and a "No Grown-Ups" sign; Priya strained her calf on a long run and is swimming during two weeks of physio; Biscuit claimed a blanket knitted by her sister.
[treehousedone] Marcus: The treehouse is finished! Zoe painted the door bright yellow and hung a sign that says "No Grown-Ups". || caption=a photo of a wooden treehouse with a yellow door in an oak tree; query=treehouse yellow door; url=https://example.invalid/img/treehouse.jpg
Priya: I love that sign. Are you allowed in at all?
Marcus: Only if I bring snacks. So, yes, frequently.
[injury] Priya: I'm a bit frustrated: I strained my calf on a long run, so I'm off running for two weeks and doing physio.
Marcus: Oh no. Will it affect Chicago?
[physio] Priya: My physiotherapist thinks I'll be fine if I rest now. I'm swimming in the meantime to keep my fitness.
Marcus: Smart. Biscuit must be thrilled to have you home more.
[blanket] Priya: He is. He's claimed the new knitted blanket my sister sent, and he won't share it. || caption=a photo of a greyhound curled up on a striped knitted blanket
--- 7 | 2023-09-09 15:00 | date only
--- 8 | 2023-09-30 10:30 | date only
=== conv-2 | Lena | Omar
--- 1 | 2023-01-12 16:10 | Lena, a marine biologist, leads this year's kelp forest survey off Monterey with cold dives; Omar named his puzzle platformer Lanternfall and plans a March demo.
Omar: Happy new year, Lena! Did you survive the holidays?
[kelp] Lena: Barely! I'm back at the lab. This year I'm leading the kelp forest survey off Monterey, so lots of cold dives.
Omar: That sounds incredible. How cold are we talking?
[cold] Lena: About eleven degrees Celsius. I wear a 7 mm wetsuit and still shiver.
[lanternfall] Omar: I'd last thirty seconds. I finally picked a name for my game: Lanternfall. It's a puzzle platformer about a lighthouse keeper.
Lena: I love that name. When can I play it?
[release] Omar: I'm aiming to release the demo on Steam in March and the full game in the autumn.
Lena: I'll wishlist it right away.
--- 2 | 2023-03-03 20:00 | Lena started Japanese lessons twice a week for a planned research exchange in Hokkaido; the Lanternfall demo went live on Steam and Omar's cat Pesto finds bugs by walking on the keyboard.
[japanese] Lena: I started Japanese lessons twice a week. I'm trying to get ready for a research exchange in Hokkaido next year.
Omar: Sugoi! That's the only word I know.
Lena: Ha, that's more than I knew a month ago. Hiragana is going well, katakana not so much.
[demo] Omar: The Lanternfall demo went live on Steam on Tuesday! Over four thousand people downloaded it in the first two days. || caption=a screenshot of a pixel art lighthouse on a stormy cliff; query=pixel art lighthouse game; url=https://example.invalid/img/lanternfall.png
Lena: Four thousand! That's incredible, congratulations!
[pesto] Omar: Thanks! My cat Pesto has been my QA tester. She walks on the keyboard and finds bugs I never would.
Lena: Pesto deserves a credit in the game.
Omar: She's already listed as Chief Keyboard Officer.
--- 3 | 2023-04-21 13:30 | Omar joined a bouldering gym and sent his first V3 after eleven attempts; Lena's family plans a surprise 90th birthday party for grandmother Rosa on May 20 in Porto, with a quilt from the grandchildren.
[climbing] Omar: I joined a bouldering gym near my apartment. My forearms have never hurt this much.
Lena: Bouldering is so fun! What grade are you climbing?
[v3] Omar: Mostly V2s, but on Sunday I sent my first V3. It took me eleven attempts.
Lena: Eleven attempts is dedication.
[grandma] Lena: My family is planning a surprise party for my grandmother Rosa's 90th birthday on May 20 in Porto, where she lives.
Omar: Ninety! What are you bringing her?
[quilt] Lena: My cousins and I are making a quilt with a square from each grandchild. Mine has an embroidered sea otter.
Omar: She's going to cry. In a good way.
--- 4 | 2023-06-02 10:15 | Grandma Rosa loved her surprise party and quilt; Pesto swallowed a hair tie and went to the vet; Lena volunteers at the aquarium tide pool exhibit on Saturdays.
[party] Lena: The party for Grandma Rosa was perfect. She cried when she saw the quilt, and then she danced with every grandchild. || caption=a photo of an elderly woman holding a patchwork quilt surrounded by family; query=grandmother birthday quilt; url=https://example.invalid/img/quilt.jpg
Omar: That's so sweet. Did she suspect anything?
Lena: Not at all. My uncle told her they were going to a church lunch.
[pestovet] Omar: Glad it worked out. On my side, Pesto had to go to the vet: she swallowed a hair tie. She's fine now but very offended.
Lena: Poor Pesto! Hide your hair ties.
[aquarium] Lena: I also started volunteering at the aquarium on Saturdays. I explain the tide pool exhibit to kids.
Omar: That sounds like the perfect job for you.
Lena: The kids ask the best questions. One asked whether sea stars have feelings.
--- 5 | 2023-07-11 19:50 | Omar will record ambient sounds in Iceland in August, driving a campervan around Vik; Lena signed up for the JLPT N5 exam in December and her team tagged a sea otter named Nori.
[iceland] Omar: I'm going to Iceland in August to record ambient sounds for Lanternfall: waves, wind, seabirds.
Lena: That's such a cool way to do sound design. Where will you go?
[vik] Omar: Mostly around Vik and the black sand beaches. I rented a campervan for ten days.
Lena: Bring extra layers, it's windy there even in summer.
[jlpt] Lena: I signed up for the JLPT N5 exam in December. My teacher thinks I'm ready.
Omar: You'll crush it.
[otter] Lena: Also, at work we tagged a sea otter that keeps visiting our survey site. The team named her Nori.
Omar: Nori the otter! Please tell me there are photos.
--- 6 | 2023-08-29 17:25 | Omar came back from Iceland with nine hours of recordings including puffins at Dyrholaey and set the Lanternfall release for October 24; Lena was accepted to the Hokkaido exchange starting next April.
[icelandback] Omar: I'm back from Iceland. I recorded about nine hours of audio, including puffins at Dyrholaey. || caption=a photo of a puffin standing on a grassy cliff edge; query=puffin cliff iceland; url=https://example.invalid/img/puffin.jpg
Lena: Puffins! Did the recordings turn out well?
Omar: Mostly. The wind ruined a few, but I got a thunderstorm recording that's going straight into the final level.
[releasedate] Omar: I also locked in the release date for Lanternfall: October 24.
Lena: Mark my calendar. I'm taking the day off to play.
[hokkaido] Lena: I got my acceptance for the Hokkaido exchange! I'll be studying sea urchin grazing on kelp starting next April.
Omar: Congratulations! Your Japanese lessons are going to pay off.
Lena: That's the plan. Ganbarimasu!
"""

# (sample_id, category, question, answer (None = missing), adversarial_answer, evidence strings)
LOCOMO_QUESTIONS: tuple[tuple[str, int, str, str | int | None, str | None, tuple[str, ...]], ...] = (
    ("conv-1", 2, "When did Priya run her first half marathon?", "15 April 2023", None, ("{race}",)),
    ("conv-1", 4, "What is the name of Marcus's bakery?", "Rise & Crumb", None, ("{name}",)),
    ("conv-1", 4, "What kind of dog did Priya adopt?", "a retired racing greyhound named Biscuit", None, ("{adopt}",)),
    (
        "conv-1",
        1,
        "What projects has Marcus done together with his daughter Zoe?",
        "named the bakery; built a treehouse",
        None,
        ("{name}; {treehouse}",),
    ),
    ("conv-1", 2, "When does Rise & Crumb open?", "1 July 2023", None, ("{opening}",)),
    (
        "conv-1",
        3,
        "Would Priya likely enjoy a trip focused on food?",
        "Yes; she plans to eat pasteis de nata every day in Lisbon",
        None,
        (),
    ),
    ("conv-1", 4, "How old is Marcus's sourdough starter Gerald?", 8, None, ("{gerald}",)),
    ("conv-1", 5, "What is the name of Marcus's greyhound?", None, "Biscuit", ("{adopt}",)),
    ("conv-1", 1, "What kinds of exercise does Priya do?", "running and swimming", None, ("{halfplan} {physio}",)),
    ("conv-1", 2, "When did Zoe have her first piano recital?", "10 June 2023", None, ("{recital}", "{recitaldone}")),
    ("conv-1", 4, "What color did Zoe paint the treehouse door?", "bright yellow", None, ("{treehousedone|colon}",)),
    ("conv-1", 5, "How did Marcus strain his calf?", None, "on a long run", ("{injury}",)),
    (
        "conv-1",
        4,
        "Who did Marcus hire to keep up with demand at the bakery?",
        "Tomas and Aiyana",
        None,
        ("{hire}", "{hire}"),
    ),
    ("conv-1", 4, "Which marathon did Priya register for?", "the Chicago Marathon", None, ("{fullmarathon}", "D6:40")),
    ("conv-2", 4, "What is the name of Omar's game?", "Lanternfall", None, ("{lanternfall}",)),
    ("conv-2", 2, "When did the Lanternfall demo go live on Steam?", "28 February 2023", None, ("{demo}",)),
    (
        "conv-2",
        1,
        "What trouble has Omar's cat Pesto caused?",
        "she walks on the keyboard and she swallowed a hair tie",
        None,
        ("{pesto}", "{pestovet}"),
    ),
    ("conv-2", 2, "When is the surprise party for Lena's grandmother Rosa?", "20 May 2023", None, ("{grandma}",)),
    ("conv-2", 4, "How many attempts did it take Omar to send his first V3?", 11, None, ("{v3}",)),
    (
        "conv-2",
        3,
        "Would Lena be comfortable swimming in cold water?",
        "Likely yes, she dives in eleven-degree water for her kelp survey",
        None,
        ("{kelp|pad}", "{cold}"),
    ),
    ("conv-2", 5, "What did Omar embroider on the quilt square?", None, "a sea otter", ("{quilt}",)),
    ("conv-2", 5, "Did Omar make the quilt for his grandmother?", "No", "Yes", ("{quilt}",)),
    (
        "conv-2",
        1,
        "How is Lena preparing for her research exchange in Hokkaido?",
        "Japanese lessons twice a week and the JLPT N5 exam",
        None,
        ("{japanese}", "{jlpt}"),
    ),
    ("conv-2", 2, "When will Lanternfall be released?", "24 October 2023", None, ("{releasedate}",)),
    (
        "conv-2",
        4,
        "Where does Lena volunteer on Saturdays?",
        "at the aquarium's tide pool exhibit",
        None,
        ("D", "{aquarium}"),
    ),
    (
        "conv-2",
        3,
        "Is Omar likely to enjoy outdoor adventures?",
        "Yes, he goes bouldering and travelled around Iceland in a campervan",
        None,
        ("{climbing}", "{vik}"),
    ),
    ("conv-2", 4, "What birds did Omar record at Dyrholaey?", "puffins", None, ("{icelandback}",)),
)

# MC10's reported naive numbering of LoCoMo categories (its label for category n)
MC10_NAIVE_LABELS = {1: "single_hop", 2: "multi_hop", 3: "temporal_reasoning", 4: "open_domain", 5: "adversarial"}
MC10_ADVERSARIAL_ANSWER = "Not answerable"
MC10_FILLER_CHOICES = (
    "Not answerable",
    "in Seattle",
    "a golden retriever",
    "3 March 2023",
    "the Boston Marathon",
    "pottery and painting",
    "Sunny Side Bakery",
    "12",
    "his sister",
    "blue",
)

LONGMEMEVAL_SCRIPT = """
--- dog | answer_5d1c2a7e_1 | 2023-05-06 10:12
user*: I finally adopted a dog last weekend! She's a two-year-old border collie named Pixel from the county shelter. Any tips for the first month?
assistant: Congratulations on adopting Pixel! Border collies are smart, high-energy herding dogs. Keep a consistent routine for meals, walks and sleep, start short training sessions with rewards, and give her plenty of mental exercise.
user: She already knows sit and down. What games would keep her busy on rainy days?
assistant: Try puzzle feeders, hide-and-seek with treats around the house, and teaching new tricks in five-minute sessions. Herding breeds love having a job to do.
--- bread | answer_9b7e3f10_1 | 2023-03-18 16:40
user: I want to bake my first sourdough loaf this weekend. My starter is about two weeks old and doubles in six hours. What hydration should I use?
assistant*: For a first loaf I'd suggest about 75% hydration: for example 500 g of bread flour, 375 g of water, 100 g of active starter and 10 g of salt. It is forgiving to handle and still gives an open crumb.
user: Should I use a Dutch oven?
assistant: Yes. Preheat it at 250 C, bake the loaf covered for 20 minutes, then uncovered at 230 C for another 20 to 25 minutes until the crust is deep brown.
--- hike | answer_c41d88a2_1 | 2023-04-02 09:05
user*: I've been feeling burned out lately. What recharges me most is a quiet hike or birdwatching at the lake early in the morning; I really can't stand crowded places like concerts or festivals.
assistant: That makes a lot of sense. Quiet time in nature is restorative for many people. Could you block a regular early-morning slot for a walk by the lake?
user: Good idea. Do you know any beginner birdwatching apps?
assistant: Merlin Bird ID from the Cornell Lab is great for beginners: it identifies birds from a photo or from their song.
--- guitar | answer_7a2e51b3_1 | 2023-01-15 20:30
user*: I started taking guitar lessons every Thursday evening, 45 dollars per lesson. My fingertips are killing me.
assistant: Sore fingertips are completely normal in the first weeks. Practice in short sessions of 15 to 20 minutes and keep your nails short.
user: How long until I get calluses?
assistant: Usually two to four weeks of daily practice. After that, pressing the strings gets much easier.
--- piano | answer_7a2e51b3_2 | 2023-02-20 19:10
user*: My neighbor offered to teach me piano in exchange for help with her vegetable garden, so now I'm learning piano too.
assistant: What a lovely trade! Start with simple pieces and practice hands separately before putting them together.
user: Any tips for practicing scales?
assistant: Use a metronome at a slow tempo, focus on even fingering, and increase the speed by a few beats per minute only when it feels effortless.
--- ukulele | answer_7a2e51b3_3 | 2023-04-11 21:45
user*: I picked up a ukulele at a garage sale for 20 dollars, so I'm learning it alongside the guitar and the piano. Is that too much at once?
assistant: It can work if you set a clear schedule. The ukulele shares chord concepts with the guitar, so they reinforce each other.
user: Which songs are easy on the ukulele?
assistant: Try "Riptide", "Somewhere Over the Rainbow" or "I'm Yours": they use only four or five common chords.
--- jobold | answer_e0f4c6d9_1 | 2023-01-09 08:50
user*: I'm a UX designer at Bluepeak Design and I have to present a redesign of our checkout flow on Friday. How should I structure the presentation?
assistant: Start with the problem and the data behind it, walk through two or three key user journeys with before and after screens, and end with the expected impact and next steps.
user: How long should it be?
assistant: Aim for 15 minutes of presentation and leave 10 minutes for questions.
--- jobnew | answer_e0f4c6d9_2 | 2023-06-12 12:30
user*: Quick update: I left Bluepeak and started my new job as a senior product designer at Northwind Labs last week. The onboarding is intense.
assistant: Congratulations on the new role at Northwind Labs! For onboarding, keep a running document of people, systems and open questions, and schedule short intro chats with your new teammates.
user: Good tip. How do I avoid overcommitting in my first month?
assistant: Agree on two or three clear goals with your manager for the first 30 days and say no to anything that does not serve them.
--- bike | answer_3f9a0b77_1 | 2023-02-04 14:00
user*: I just bought my first road bike, a used aluminum Trek, for 600 dollars. How should I set the saddle height?
assistant: With your heel on the pedal at the bottom of the stroke, your leg should be almost straight. When you pedal normally with the ball of your foot, that leaves a slight bend in the knee.
user: And the tire pressure?
assistant: For 25 mm tires, around 80 to 90 psi is a good starting point for most riders.
--- triathlon | answer_3f9a0b77_2 | 2023-03-25 17:20
user*: I signed up for a sprint triathlon in July! The swim is 750 meters and I'm nervous about open water.
assistant: Congratulations! Practice sighting every six to eight strokes, do a few open-water sessions before race day, and start at the back of your wave to avoid the crowd.
user: Should I buy a wetsuit?
assistant: If the water is below about 22 C a wetsuit helps with warmth and buoyancy; many shops rent them for the season.
--- soup | sharegpt_lentilSoup_0 | 2023-02-11 18:05
user: Can you give me a simple red lentil soup recipe?
assistant: Saute an onion, two carrots and two garlic cloves in olive oil, add a cup of red lentils, a teaspoon of cumin and a liter of stock, simmer for 20 minutes and blend half of it.
user: Can I freeze it?
assistant: Yes, it freezes well for up to three months. Cool it completely first and leave some space in the container.
--- kyoto | sharegpt_kyotoTrip_0 | 2023-03-08 21:15
user: I'm planning three days in Kyoto in the autumn. What should I not miss?
assistant: Fushimi Inari early in the morning, the Arashiyama bamboo grove, Kiyomizu-dera at sunset and an evening walk through Gion.
user: Is a rail pass worth it for that?
assistant: Not for Kyoto alone; buses and the subway are cheap. A pass only pays off if you also travel between several cities.
--- laptop | ultrachat_laptop_0 | 2023-04-20 13:40
user: I need a laptop for photo editing under 1500 dollars. What specs matter most?
assistant: Prioritize a color-accurate screen covering most of the sRGB or DCI-P3 gamut, at least 16 GB of RAM and a fast SSD.
user: Is a dedicated graphics card necessary?
assistant:
user: Sorry, did my last message go through?
assistant: Yes. For photo editing a dedicated GPU helps with some filters, but the screen and RAM matter more.
--- plants | ultrachat_plants_0 | 2023-05-15 08:30
user: My pothos has yellow leaves. What am I doing wrong?
assistant: Yellow leaves on a pothos usually mean overwatering. Let the top few centimeters of soil dry out between waterings and make sure the pot drains.
user: Should I repot it?
assistant: Only if roots are circling the pot or coming out of the drainage holes; spring is the best time.
--- python | sharegpt_pyBug_0 | 2023-06-01 22:10
user: My Python script raises KeyError when I read a dictionary key that sometimes is missing. How do I fix it?
assistant: Use dict.get with a default, for example value = data.get("name", ""), or check with "if 'name' in data" before reading it.
user: And for nested dictionaries?
assistant: Chain get calls with empty dictionaries as defaults, or catch KeyError around the whole lookup.
--- movies | ultrachat_movies_0 | 2023-06-20 20:00
user: Can you recommend a few feel-good movies for a rainy evening?
assistant: Paddington 2, The Grand Budapest Hotel, Chef and Little Miss Sunshine are all warm and funny.
user: Anything animated?
assistant: Try Spirited Away, Wall-E or Coco.
"""

# (question_id, question_type, question, answer, question date, answer session names,
#  filler session names for the S haystack (the question's answer sessions are added);
#  a filler name given twice is placed twice (the second time at the date after '@'))
LONGMEMEVAL_QUESTIONS: tuple[tuple[str, str, str, str | int, str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "5d1c2a7e",
        "single-session-user",
        "What breed is the dog I adopted?",
        "A border collie",
        "2023-07-01 09:00",
        ("dog",),
        ("soup", "kyoto", "plants", "movies"),
    ),
    (
        "9b7e3f10",
        "single-session-assistant",
        "In our chat about my first sourdough loaf, what hydration level did you suggest?",
        "75%",
        "2023-07-02 10:30",
        ("bread",),
        ("laptop", "kyoto", "python"),
    ),
    (
        "c41d88a2",
        "single-session-preference",
        "Can you suggest something for me to do this weekend?",
        "The user would prefer quiet outdoor activities such as an early-morning hike or birdwatching at a lake, "
        "and would not prefer crowded events like concerts or festivals.",
        "2023-07-03 18:00",
        ("hike",),
        ("movies", "soup", "laptop"),
    ),
    (
        "7a2e51b3",
        "multi-session",
        "How many musical instruments am I currently learning to play?",
        3,
        "2023-07-04 20:15",
        ("guitar", "piano", "ukulele"),
        ("plants", "python"),
    ),
    (
        "e0f4c6d9",
        "knowledge-update",
        "Where do I work now?",
        "Northwind Labs",
        "2023-07-05 08:45",
        ("jobold", "jobnew"),
        ("kyoto", "soup", "kyoto@2023-05-28 19:30"),
    ),
    (
        "gpt4_3f9a0b77",
        "temporal-reasoning",
        "Which did I do first, buy my road bike or sign up for the sprint triathlon?",
        "You bought the road bike first (in early February), then signed up for the triathlon in late March.",
        "2023-07-06 12:00",
        ("bike", "triathlon"),
        ("movies", "plants"),
    ),
    (
        "8e2d6f41_abs",
        "single-session-user",
        "What is the name of my cat?",
        "You did not mention a cat. You mentioned adopting a border collie named Pixel.",
        "2023-07-07 09:30",
        ("dog",),
        ("python", "soup"),
    ),
    (
        "b5a0c9e2_abs",
        "multi-session",
        "How much did I spend in total on my violin and guitar lessons?",
        "The information provided is not enough. You mentioned guitar lessons at 45 dollars each but never "
        "violin lessons.",
        "2023-07-08 17:45",
        ("guitar",),
        ("laptop", "movies"),
    ),
)
